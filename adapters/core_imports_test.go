package adapters

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// drivers are the adapters that drive core from outside: the listeners call use cases and the
// loops' operator commands, and config translates the file into their Configs. Every other
// adapter implements ports, so it speaks in core/domain's types and calls nothing of core.
var drivers = map[string]bool{"config": true, "http": true, "protocol": true, "tcp": true, "websocket": true}

// checkCoreImport says why the production code of adapter own may not import path, or nil.
func checkCoreImport(own, path string) error {
	pkg, ok := strings.CutPrefix(path, module+"/core/")
	switch {
	case !ok || strings.HasPrefix(pkg, "domain/"):
		return nil
	case !drivers[own]:
		return fmt.Errorf("adapters/%s imports %q: an adapter that implements ports imports only core/domain of core; a rule it needs belongs in core/domain", own, path)
	case pkg == "simulation":
		return fmt.Errorf("adapters/%s imports %q: the simulation is tests only", own, path)
	case pkg == "runtime" && own != "config":
		return fmt.Errorf("adapters/%s imports %q: only cmd/imd runs the runtime (config translates its Config)", own, path)
	}
	return nil
}

func TestCheckCoreImport(t *testing.T) {
	tests := []struct {
		own, path string
		ok        bool
	}{
		{"localfs", module + "/core/domain/objectkey", true},
		{"localfs", module + "/core/usecase/uploads", false},
		{"mysql", module + "/core/store/dualread", false},
		{"redis", module + "/core/kit/singleflight", false},
		{"mysql", module + "/ports", true},
		{"http", module + "/core/usecase/send", true},
		{"http", module + "/core/loop/migration", true},
		{"http", module + "/core/runtime", false},
		{"config", module + "/core/runtime", true},
		{"protocol", module + "/core/simulation", false},
	}
	for _, tt := range tests {
		if err := checkCoreImport(tt.own, tt.path); (err == nil) != tt.ok {
			t.Errorf("checkCoreImport(%s, %s) = %v, want allowed %v", tt.own, tt.path, err, tt.ok)
		}
	}
}

// TestAdaptersImportCoreByRole keeps the hexagon's two sides apart: the blob stores, the
// databases and the fakes implement ports and never call a use case; only the drivers do.
// Tests may drive core as they need.
func TestAdaptersImportCoreByRole(t *testing.T) {
	eachImport(t, func(own, file, p string, inTest bool) {
		if inTest {
			return
		}
		if err := checkCoreImport(own, p); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	})
}

// eachImport calls fn with every import of every Go file of an adapter (own, its folder under
// adapters/), and whether the file is a test.
func eachImport(t *testing.T, fn func(own, file, path string, inTest bool)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		own, _, nested := strings.Cut(filepath.ToSlash(path), "/")
		if !nested { // this package
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			fn(own, filepath.ToSlash(path), p, strings.HasSuffix(path, "_test.go"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
