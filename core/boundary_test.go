package core

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportBoundary keeps the hexagon honest: core and ports may import only the standard
// library, the module's ports and core — never an adapter, a driver or a framework.
func TestImportBoundary(t *testing.T) {
	for _, dir := range []string{".", filepath.Join("..", "ports")} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if !allowed(p, strings.HasSuffix(path, "_test.go")) {
					t.Errorf("%s imports %q: core and ports may import only the standard library, core and ports", path, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func allowed(p string, inTest bool) bool {
	if p == module+"/ports" || strings.HasPrefix(p, module+"/ports/") || p == module+"/core" || strings.HasPrefix(p, module+"/core/") {
		return true
	}
	// Core tests may use the in-memory fakes; production core code may not.
	if inTest && strings.HasPrefix(p, module+"/adapters/memory") {
		return true
	}
	first, _, _ := strings.Cut(p, "/")
	return !strings.Contains(first, ".")
}

// module is the path in go.mod: imports under it are the project's own.
const module = "github.com/imdhq/imd"
