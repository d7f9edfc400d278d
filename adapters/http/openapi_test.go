package http

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/docs"
	"github.com/imdhq/imd/docs/openapicheck"
)

// everyRoute builds a server whose optional routes are all present.
func everyRoute(t *testing.T) *Server {
	t.Helper()
	h := newHarness(t, Config{AdminKey: adminKey, DevSignIn: true}, Deps{
		Metrics: http.NotFoundHandler(),
		Inbox:   stubInbox{},
		Social:  SocialDeps{Files: stubFiles{}, Dialogs: stubInbox{}, Settings: stubInbox{}},
	})
	return h.srv
}

type stubInbox struct{}

func (stubInbox) Rebuild(context.Context, string, int64) (int, error)         { return 0, nil }
func (stubInbox) SetMuted(context.Context, string, int64, int64, bool) error  { return nil }
func (stubInbox) SetPinned(context.Context, string, int64, int64, bool) error { return nil }
func (stubInbox) Dialogs(context.Context, string, int64, int64, int) (inbox.DialogPage, error) {
	return inbox.DialogPage{}, nil
}

type stubFiles struct{}

func (stubFiles) Put(string, url.Values, string, io.Reader) error { return nil }
func (stubFiles) Open(string, url.Values) (*os.File, error)       { return nil, os.ErrNotExist }

var echoParam = regexp.MustCompile(`:([a-z_]+)`)

// openAPIPath spells an Echo route the OpenAPI way: :name → {name}, a trailing * → {key}.
func openAPIPath(p string) string {
	p = echoParam.ReplaceAllString(p, "{$1}")
	if strings.HasSuffix(p, "/*") {
		p = strings.TrimSuffix(p, "*") + "{key}"
	}
	return p
}

// TestOpenAPIListsEveryRoute keeps docs/openapi.yaml and the router in step: every registered
// route is documented, and every documented operation is registered.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	spec, err := openapicheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, op := range spec.Operations() {
		documented[op.Method+" "+op.Path] = true
	}
	registered := map[string]bool{}
	for _, r := range everyRoute(t).echo.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		registered[r.Method+" "+openAPIPath(r.Path)] = true
	}
	var missing, stale []string
	for op := range registered {
		if !documented[op] {
			missing = append(missing, op)
		}
	}
	for op := range documented {
		if !registered[op] {
			stale = append(stale, op)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	if len(missing) > 0 {
		t.Errorf("routes missing from docs/openapi.yaml:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(stale) > 0 {
		t.Errorf("docs/openapi.yaml documents routes that do not exist:\n  %s", strings.Join(stale, "\n  "))
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	rec := h.doWith(http.MethodGet, "/openapi.yaml", "", nil)
	if rec.Code != http.StatusOK || rec.Body.String() != string(docs.OpenAPI) {
		t.Fatalf("GET /openapi.yaml = %d, %d bytes; want the %d bytes of docs/openapi.yaml", rec.Code, rec.Body.Len(), len(docs.OpenAPI))
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/yaml") {
		t.Errorf("Content-Type = %q", ct)
	}
}
