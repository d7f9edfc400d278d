package adapters

import (
	"strings"
	"testing"
)

// module is the path in go.mod: imports under it are the project's own.
const module = "github.com/imdhq/imd"

// crossTests are test files that still drive a second real adapter, each with why: they are
// measured configurations or exercise the real partner's signatures; new ones are refused.
var crossTests = map[string]string{
	"tcp/server/bench_test.go":              "measures frames with the production metrics adapter (docs/BENCHMARKS.md)",
	"protocol/session/fanout_bench_test.go": "measures fan-out with Redis conversation lists when IMD_TEST_REDIS_ADDR is set",
	"http/client_test.go":                   "serves /files/ through the real localfs signatures and jwt tokens",
	"http/admin_test.go":                    "checks the tokens the admin API issues with the real jwt adapter",
}

// speaksProtocol are the transports that carry the client protocol, the only adapters that
// share adapters/protocol/... (its frames, commands, sessions and budgets). Any other adapter
// that needs one of its types gets it from cmd/imd, as adapters/config gets nothing from it.
var speaksProtocol = map[string]bool{"tcp": true, "websocket": true, "http": true}

// TestAdaptersDoNotImportEachOther keeps every adapter replaceable on its own: an adapter
// imports no other adapter, a transport only adapters/protocol/..., and its tests add only the
// memory fakes.
func TestAdaptersDoNotImportEachOther(t *testing.T) {
	seen := map[string]bool{}
	eachImport(t, func(own, path, p string, inTest bool) {
		other, ok := strings.CutPrefix(p, module+"/adapters/")
		if !ok {
			return
		}
		other, _, _ = strings.Cut(other, "/")
		switch {
		case other == own:
		case other == "protocol" && speaksProtocol[own]:
		case inTest && other == "memory":
		case inTest && crossTests[path] != "":
			seen[path] = true
		default:
			t.Errorf("%s imports %q: only the transports (tcp, websocket, http) may import adapters/protocol, and tests adapters/memory; wire them through ports in cmd/imd", path, p)
		}
	})
	for path := range crossTests {
		if !seen[path] {
			t.Errorf("%s no longer imports another adapter: drop it from crossTests", path)
		}
	}
}
