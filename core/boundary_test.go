package core

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestImportBoundary keeps the hexagon honest: core and ports may import only the standard
// library, the module's ports and core — never an adapter, a driver or a framework.
func TestImportBoundary(t *testing.T) {
	for _, dir := range []string{".", filepath.Join("..", "ports")} {
		eachImport(t, dir, func(file, p string, inTest bool) {
			if !allowed(p, inTest) {
				t.Errorf("%s imports %q: core and ports may import only the standard library, core and ports", file, p)
			}
		})
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
