package core

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// architectureDoc is the map of the core; every core package has its row there.
const architectureDoc = "../docs/ARCHITECTURE.md"

// TestArchitectureMapsEveryPackage keeps docs/ARCHITECTURE.md a complete map: a core package
// without its row in the package table fails here, and so does a row for a package that is
// gone.
func TestArchitectureMapsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			if pkg, _, ok := strings.Cut(rest, "` |"); ok {
				rows[pkg] = true
			}
		}
	}
	pkgs := corePackages(t)
	for _, p := range pkgs {
		if !rows[p] {
			t.Errorf("%s has no row in %s: add one line saying what it is or does", p, architectureDoc)
		}
	}
	for p := range rows {
		if strings.HasPrefix(p, "core") && !slices.Contains(pkgs, p) {
			t.Errorf("%s maps %s, which is no core package", architectureDoc, p)
		}
	}
}

// TestDomainIsALeaf keeps the split between what the domain is and what it does: a package
// under core/domain imports only the standard library and other core/domain packages, never a
// port or a use case, so ports and the fakes can speak in its types.
func TestDomainIsALeaf(t *testing.T) {
	err := filepath.WalkDir("domain", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(ip, "/")
			if strings.Contains(first, ".") && !strings.HasPrefix(ip, module+"/core/domain/") {
				t.Errorf("%s imports %q: core/domain may import only the standard library and core/domain", p, ip)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// corePackages lists every directory of core that holds Go files, as "core/...".
func corePackages(t *testing.T) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		pkg := path.Join("core", filepath.ToSlash(filepath.Dir(p)))
		if !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}
