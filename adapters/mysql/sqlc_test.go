package mysql

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedCodeIsCurrent fails while sql/ and adapters/mysql/sqlcdb disagree: run
// `go tool sqlc generate` from the repository root.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sqlc tool")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "sqlc", "diff")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool sqlc diff: %v\n%s", err, out)
	}
}
