package core

import (
	"fmt"
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

// kind is what a core package is, told by its folder: core/<kind>/<name>, or core/runtime and
// core/simulation, which compose the others and so stand beside them.
type kind string

const (
	kindRoot       kind = "core"       // the package doc and the tests of core's rules
	kindDomain     kind = "domain"     // what the domain is: values, rules, pure functions
	kindKit        kind = "kit"        // small generic helpers
	kindStore      kind = "store"      // decorators that implement ports over other ports
	kindUseCase    kind = "usecase"    // what a request (a client's or an operator's) does
	kindLoop       kind = "loop"       // background work core/runtime runs
	kindRuntime    kind = "runtime"    // runs the loops of each tenant and of the node
	kindSimulation kind = "simulation" // tests only: the whole core on the memory fakes
	kindPorts      kind = "ports"      // imd/ports, what core needs from the outside world
)

// mayImport is, for each kind, the kinds its production code may import besides the standard
// library. The order of the layers: domain ← kit ← store ← use case ← loop ← runtime, ports
// from store up. Within one kind only domain packages import each other freely; any other
// import inside a kind, and a use case's import of a loop, is an edge of its own (edges).
var mayImport = map[kind][]kind{
	kindRoot:       nil,
	kindDomain:     {kindDomain},
	kindKit:        {kindDomain},
	kindStore:      {kindDomain, kindKit, kindPorts},
	kindUseCase:    {kindDomain, kindKit, kindPorts, kindStore},
	kindLoop:       {kindDomain, kindKit, kindPorts, kindStore, kindUseCase},
	kindRuntime:    {kindDomain, kindKit, kindPorts, kindStore, kindUseCase, kindLoop},
	kindSimulation: {kindDomain, kindKit, kindPorts, kindStore, kindUseCase, kindLoop, kindRuntime},
}

// edge is one import, from package to package, both as "core/...".
type edge struct{ from, to string }

// edges are the imports mayImport does not allow by kind, each with the dependency it
// carries; a new one is a decision, written here with its reason. A listed edge the code no
// longer has fails TestCoreLayers, so the list stays the true one.
var edges = map[edge]string{
	{"core/usecase/admin", "core/usecase/directory"}:         "operator user and group commands check users and build groups by the directory's rules",
	{"core/usecase/directory", "core/usecase/conversation"}:  "group changes resolve the group's conversation",
	{"core/usecase/directory", "core/usecase/send"}:          "membership and friendship changes are announced as system messages through the send path",
	{"core/usecase/favorites", "core/usecase/history"}:       "a saved message is read wherever it lives, month table or archive",
	{"core/usecase/groupfiles", "core/usecase/conversation"}: "a group's file list is for those who may read the group",
	{"core/usecase/history", "core/usecase/conversation"}:    "every read resolves the address and checks the reader may use the conversation",
	{"core/usecase/longsearch", "core/usecase/conversation"}: "a search's topics are those the reader may read",
	{"core/usecase/longsearch", "core/usecase/history"}:      "every hit is read back, and its rights re-checked, through history",
	{"core/usecase/modify", "core/usecase/conversation"}:     "recall, edit and delete act in a conversation the user may write to",
	{"core/usecase/modify", "core/usecase/send"}:             "each change is announced as one system message through the send path",
	{"core/usecase/forward", "core/usecase/conversation"}:    "a copy is addressed like a send",
	{"core/usecase/forward", "core/usecase/send"}:            "a copy goes through the send path like any message",
	{"core/usecase/reactions", "core/usecase/conversation"}:  "reactions and pins act in a conversation the user may read",
	{"core/usecase/reactions", "core/usecase/send"}:          "each reaction or pin is announced as one system message through the send path",
	{"core/usecase/read", "core/usecase/conversation"}:       "a read mark is set in a conversation the user is in",
	{"core/usecase/read", "core/usecase/history"}:            "the watermark is checked against the stored message",
	{"core/usecase/replies", "core/usecase/history"}:         "a reply's preview is the message read through history",
	{"core/usecase/reports", "core/usecase/history"}:         "a report carries the reported message as evidence, read through history",
	{"core/usecase/send", "core/usecase/conversation"}:       "a send resolves its address into a conversation the sender may write to",
	{"core/usecase/typing", "core/usecase/conversation"}:     "a typing notice goes to a conversation the typist is in",
	{"core/usecase/receipts", "core/usecase/conversation"}:   "who read a message is asked in a conversation the sender is in",
	{"core/usecase/receipts", "core/usecase/history"}:        "READ_STATE names a stored message: its sender, or 40401",
	{"core/usecase/uploads", "core/usecase/conversation"}:    "a download is for those who may read a conversation that references the key",
	{"core/store/messagereads", "core/store/dualread"}:       "every message read merges the legacy table through dual read while it is on",
	{"core/store/messagereads", "core/store/archivereader"}:  "every message read goes to the archive for archived months, in front of dual read",
	{"core/usecase/admin", "core/loop/shardmanager"}:         "an operator's advance of the active month is the shard manager's, under its lifecycle lock",
	{"core/usecase/archiver", "core/loop/shardmanager"}:      "the sealed → archived change and the backlog that holds sealing back are the shard manager's",
}

// noKind says where a package of no kind belongs.
const noKind = "is no kind of core package: put it under core/domain, core/kit, core/store, core/usecase or core/loop"

// kindOf returns the kind of a core package, "" for a folder that is no kind.
func kindOf(pkg string) kind {
	rest, ok := strings.CutPrefix(pkg, "core")
	if !ok {
		return ""
	}
	if rest == "" {
		return kindRoot
	}
	first, name, nested := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	switch k := kind(first); k {
	case kindRuntime, kindSimulation:
		if !nested {
			return k
		}
	case kindDomain, kindKit, kindStore, kindUseCase, kindLoop:
		if nested && name != "" {
			return k
		}
	}
	return ""
}

// checkImport says why package from (as "core/...") may not import path, or nil where it may.
func checkImport(from, path string) error {
	k := kindOf(from)
	if k == "" {
		return fmt.Errorf("%s %s", from, noKind)
	}
	first, _, _ := strings.Cut(path, "/")
	if !strings.Contains(first, ".") {
		return nil // the standard library
	}
	to, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return fmt.Errorf("%s imports %q: core imports no module but its own", from, path)
	}
	toKind := kindOf(to)
	if to == "ports" || strings.HasPrefix(to, "ports/") {
		toKind = kindPorts
	}
	if toKind == "" {
		return fmt.Errorf("%s imports %q: core imports only the standard library, ports and core", from, path)
	}
	if edges[edge{from, to}] != "" || slices.Contains(mayImport[k], toKind) && (toKind != k || k == kindDomain) {
		return nil
	}
	return fmt.Errorf("%s imports %s: a %s package may import only %v; a needed exception is an entry of edges, with its reason", from, to, k, mayImport[k])
}

func TestCheckImportRefusesWhatTheLayersForbid(t *testing.T) {
	tests := []struct {
		from, path string
		ok         bool
	}{
		{"core/domain/message", "strings", true},
		{"core/domain/message", module + "/core/domain/month", true},
		{"core/domain/message", module + "/ports", false},
		{"core/domain/message", module + "/core/usecase/send", false},
		{"core/kit/jobs", module + "/core/domain/apperr", true},
		{"core/kit/jobs", module + "/ports", false},
		{"core/kit/jobs", module + "/core/kit/periodic", false},
		{"core/store/membership", module + "/core/kit/singleflight", true},
		{"core/store/dualread", module + "/core/usecase/history", false},
		{"core/usecase/send", module + "/core/store/membership", true},
		{"core/usecase/read", module + "/core/usecase/history", true},
		{"core/usecase/send", module + "/core/usecase/history", false},
		{"core/usecase/send", module + "/core/loop/deliver", false},
		{"core/usecase/archiver", module + "/core/loop/shardmanager", true},
		{"core/usecase/send", module + "/core/runtime", false},
		{"core/loop/deliver", module + "/core/usecase/inbox", true},
		{"core/loop/retention", module + "/core/loop/shardmanager", false},
		{"core/loop/cluster", module + "/core/runtime", false},
		{"core/runtime", module + "/core/loop/deliver", true},
		{"core/runtime", module + "/core/simulation", false},
		{"core/usecase/send", module + "/adapters/mysql", false},
		{"core/usecase/send", "github.com/redis/rueidis", false},
		{"core/newthing", module + "/core/domain/message", false},
		{"core/usecase", module + "/core/domain/message", false},
		{"core/runtime/sub", "strings", false},
	}
	for _, tt := range tests {
		t.Run(tt.from+" → "+tt.path, func(t *testing.T) {
			if err := checkImport(tt.from, tt.path); (err == nil) != tt.ok {
				t.Errorf("checkImport = %v, want allowed %v", err, tt.ok)
			}
		})
	}
}

// TestCoreLayers keeps core's folders honest about what their packages are: every package is
// of one kind, its production code imports only what its kind may (tests may build their
// world from any core package and the memory fakes), and every exception in edges is still
// one the code has.
func TestCoreLayers(t *testing.T) {
	for _, pkg := range corePackages(t) {
		if kindOf(pkg) == "" {
			t.Errorf("%s %s", pkg, noKind)
		}
	}
	used := map[edge]bool{}
	eachImport(t, ".", func(file, ip string, inTest bool) {
		if inTest {
			return
		}
		from := path.Join("core", filepath.ToSlash(filepath.Dir(file)))
		if err := checkImport(from, ip); err != nil && kindOf(from) != "" {
			t.Errorf("core/%s: %v", file, err)
		}
		used[edge{from, strings.TrimPrefix(ip, module+"/")}] = true
	})
	for e, why := range edges {
		if !used[e] {
			t.Errorf("%s no longer imports %s (%s): drop the edge", e.from, e.to, why)
		}
	}
}

// eachImport calls fn with every import of every Go file below dir, and whether the file is a
// test.
func eachImport(t *testing.T, dir string, fn func(file, path string, inTest bool)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			fn(p, ip, strings.HasSuffix(p, "_test.go"))
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
