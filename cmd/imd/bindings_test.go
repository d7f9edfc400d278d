package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	httpapi "github.com/imdhq/imd/adapters/http"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/core/loop/cluster"
	"github.com/imdhq/imd/core/loop/deliver"
	"github.com/imdhq/imd/core/loop/listrepair"
	"github.com/imdhq/imd/core/loop/migration"
	"github.com/imdhq/imd/core/loop/retention"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/loop/seqholes"
	"github.com/imdhq/imd/core/loop/shardmanager"
	webhookloop "github.com/imdhq/imd/core/loop/webhooks"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/store/messagereads"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/archiver"
	"github.com/imdhq/imd/core/usecase/authn"
	"github.com/imdhq/imd/core/usecase/bots"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/favorites"
	"github.com/imdhq/imd/core/usecase/forward"
	"github.com/imdhq/imd/core/usecase/groupfiles"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/core/usecase/longsearch"
	"github.com/imdhq/imd/core/usecase/modify"
	"github.com/imdhq/imd/core/usecase/nativepush"
	"github.com/imdhq/imd/core/usecase/presence"
	"github.com/imdhq/imd/core/usecase/reactions"
	"github.com/imdhq/imd/core/usecase/read"
	"github.com/imdhq/imd/core/usecase/receipts"
	"github.com/imdhq/imd/core/usecase/reindex"
	"github.com/imdhq/imd/core/usecase/reports"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/core/usecase/tenantregistry"
	"github.com/imdhq/imd/core/usecase/typing"
	"github.com/imdhq/imd/core/usecase/uploads"
	"github.com/imdhq/imd/core/usecase/webhooks"
)

// depsStructs are the structs cmd/imd fills by name (Ports, and the Deps and Ops structs of the
// use cases and listeners), keyed as cmd/imd writes their type.
var depsStructs = map[string]reflect.Type{
	"admin.Deps":            reflect.TypeFor[admin.Deps](),
	"archiver.Deps":         reflect.TypeFor[archiver.Deps](),
	"authn.Deps":            reflect.TypeFor[authn.Deps](),
	"cluster.KeeperDeps":    reflect.TypeFor[cluster.KeeperDeps](),
	"cluster.PusherDeps":    reflect.TypeFor[cluster.PusherDeps](),
	"cluster.ReceiverDeps":  reflect.TypeFor[cluster.ReceiverDeps](),
	"deliver.Deps":          reflect.TypeFor[deliver.Deps](),
	"deliver.AckWaitDeps":   reflect.TypeFor[deliver.AckWaitDeps](),
	"directory.Deps":        reflect.TypeFor[directory.Deps](),
	"favorites.Deps":        reflect.TypeFor[favorites.Deps](),
	"forward.Deps":          reflect.TypeFor[forward.Deps](),
	"groupfiles.Deps":       reflect.TypeFor[groupfiles.Deps](),
	"history.Deps":          reflect.TypeFor[history.Deps](),
	"presence.Deps":         reflect.TypeFor[presence.Deps](),
	"typing.Deps":           reflect.TypeFor[typing.Deps](),
	"receipts.Deps":         reflect.TypeFor[receipts.Deps](),
	"httpapi.ArchiveOps":    reflect.TypeFor[httpapi.ArchiveOps](),
	"httpapi.Deps":          reflect.TypeFor[httpapi.Deps](),
	"httpapi.NodeOps":       reflect.TypeFor[httpapi.NodeOps](),
	"httpapi.ReferenceOps":  reflect.TypeFor[httpapi.ReferenceOps](),
	"httpapi.ShardOps":      reflect.TypeFor[httpapi.ShardOps](),
	"httpapi.SocialDeps":    reflect.TypeFor[httpapi.SocialDeps](),
	"inbox.Deps":            reflect.TypeFor[inbox.Deps](),
	"inbox.MailerDeps":      reflect.TypeFor[inbox.MailerDeps](),
	"listrepair.Deps":       reflect.TypeFor[listrepair.Deps](),
	"longsearch.SearchDeps": reflect.TypeFor[longsearch.SearchDeps](),
	"messagereads.Deps":     reflect.TypeFor[messagereads.Deps](),
	"migration.Deps":        reflect.TypeFor[migration.Deps](),
	"modify.Deps":           reflect.TypeFor[modify.Deps](),
	"reactions.Deps":        reflect.TypeFor[reactions.Deps](),
	"read.Deps":             reflect.TypeFor[read.Deps](),
	"reindex.Deps":          reflect.TypeFor[reindex.Deps](),
	"reports.Deps":          reflect.TypeFor[reports.Deps](),
	"retention.Deps":        reflect.TypeFor[retention.Deps](),
	"routerepair.Deps":      reflect.TypeFor[routerepair.Deps](),
	"runtime.NodeDeps":      reflect.TypeFor[runtime.NodeDeps](),
	"runtime.StorageDeps":   reflect.TypeFor[runtime.StorageDeps](),
	"send.Deps":             reflect.TypeFor[send.Deps](),
	"seqholes.Deps":         reflect.TypeFor[seqholes.Deps](),
	"shardmanager.Deps":     reflect.TypeFor[shardmanager.Deps](),
	"tcpserver.Deps":        reflect.TypeFor[tcpserver.Deps](),
	"tenantregistry.Deps":   reflect.TypeFor[tenantregistry.Deps](),
	"uploads.Deps":          reflect.TypeFor[uploads.Deps](),
	"webhooks.Deps":         reflect.TypeFor[webhooks.Deps](),
	"nativepush.Deps":       reflect.TypeFor[nativepush.Deps](),
	"webhookloop.Deps":      reflect.TypeFor[webhookloop.Deps](),
	"bots.Deps":             reflect.TypeFor[bots.Deps](),
	"Ports":                 reflect.TypeFor[Ports](),
}

// leftOut are the fields cmd/imd leaves to their zero value on purpose, and why.
var leftOut = map[string]string{
	"shardmanager.Deps.Floors":  "New makes the floors the shard manager shares with the send path",
	"history.Deps.RecentMonths": "zero is DefaultRecentMonths",
	"shardmanager.Deps.Sleep":   "nil is periodic.Sleep, the wall clock; only the simulation's virtual clock sets it",
	"nativepush.Deps.Sleep":     "nil is a wall-clock timer; only the use case's tests set it",
}

// TestEveryFieldIsBoundByName reads cmd/imd's source: every struct literal of Ports (in
// openAdapters and in the graph test's memory fakes) names every port, and every Deps literal
// names every field its use case or listener takes, so a port added to Ports or a field added
// to a Deps struct fails here until the wiring fills it. The compiler already refuses a field
// named twice.
func TestEveryFieldIsBoundByName(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	portsLiterals := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || lit.Type == nil {
				return true
			}
			typeName := exprString(lit.Type)
			st, known := depsStructs[typeName]
			if !known {
				if strings.HasSuffix(typeName, "Deps") || strings.HasSuffix(typeName, "Ops") {
					t.Errorf("%s: %s is not in depsStructs", fset.Position(lit.Pos()), typeName)
				}
				return true
			}
			if len(lit.Elts) == 0 {
				return true // the zero value that goes with an error
			}
			if typeName == "Ports" {
				portsLiterals++
			}
			var named []string
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					named = append(named, exprString(kv.Key))
				}
			}
			for i := range st.NumField() {
				field := st.Field(i).Name
				if !slices.Contains(named, field) && leftOut[typeName+"."+field] == "" {
					t.Errorf("%s: %s{…} leaves %s out", fset.Position(lit.Pos()), typeName, field)
				}
			}
			return true
		})
	}
	if portsLiterals != 2 {
		t.Errorf("found %d Ports literals, want 2 (openAdapters, memoryAdapters)", portsLiterals)
	}
}

// TestEveryPortIsRead: a port no constructor reads (as p.Field or c.Ports.Field) is a binding
// nothing uses; drop it from Ports.
func TestEveryPortIsRead(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x := exprString(sel.X); x == "p" || strings.HasSuffix(x, ".Ports") {
					read[sel.Sel.Name] = true
				}
			}
			return true
		})
	}
	ports := reflect.TypeFor[Ports]()
	for i := range ports.NumField() {
		if name := ports.Field(i).Name; !read[name] {
			t.Errorf("Ports.%s is bound but never read", name)
		}
	}
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return ""
}
