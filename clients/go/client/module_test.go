package client

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// sdkModules is the whole module graph of the SDK: an app that requires it gets these and
// nothing of the server. A new requirement is a decision, taken here.
var sdkModules = []string{
	"github.com/coder/websocket",
	"github.com/go-json-experiment/json",
	"github.com/imdhq/imd/clients/go",
}

func TestModuleNeedsNothingOfTheServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command lists the module graph: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-m", "-f", "{{.Path}}", "all")
	cmd.Dir = ".." // the module root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	modules := strings.Fields(string(out))
	slices.Sort(modules)
	if !slices.Equal(modules, sdkModules) {
		t.Errorf("module graph %q, want %q", modules, sdkModules)
	}
}
