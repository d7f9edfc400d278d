package http

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/imdhq/imd/core/domain/apperr"
)

var homeLink = regexp.MustCompile(`href="([^"]+)"`)

// homeServer is a ready listener with every part the page can link.
func homeServer(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("up 1\n")) }),
		Browser: Browser{
			SDK:  fstest.MapFS{"imd.js": {Data: []byte("export {}")}, "imd.d.ts": {Data: []byte("export {}")}},
			Chat: fstest.MapFS{"index.html": {Data: []byte("<!doctype html>")}},
		},
	})
	if err := h.srv.MarkReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHomePageLinksAnswer(t *testing.T) {
	h := homeServer(t)
	rec := h.doWith(http.MethodGet, "/", "", map[string]string{"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET / = %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=UTF-8" {
		t.Errorf("Content-Type = %q, want text/html; charset=UTF-8", ct)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy = %q: the page runs nothing", csp)
	}
	links := homeLink.FindAllStringSubmatch(rec.Body.String(), -1)
	seen := map[string]bool{}
	for _, m := range links {
		seen[m[1]] = true
		got := h.doWith(http.MethodGet, m[1], "", map[string]string{"Accept": "text/html"})
		if got.Code != http.StatusOK {
			t.Errorf("the page links %s, which answers %d", m[1], got.Code)
		}
	}
	for _, want := range []string{"/chat/", "/console/", "/sdk/imd.js", "/metrics", "/openapi.yaml", "/docs/", "/docs/SCALING.md"} {
		if !seen[want] {
			t.Errorf("the page does not link %s", want)
		}
	}
}

// TestHomePageLeavesOutAbsentParts: a listener without the chat, the SDK or metrics links none
// of them, so no link on the page answers 404.
func TestHomePageLeavesOutAbsentParts(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	rec := h.doWith(http.MethodGet, "/", "", map[string]string{"Accept": "text/html"})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET / = %d", rec.Code)
	}
	for _, absent := range []string{"/chat/", "/sdk/", "/metrics"} {
		if strings.Contains(rec.Body.String(), `href="`+absent) {
			t.Errorf("the page links %s, which this listener does not serve", absent)
		}
	}
}

// TestRootIsNotFoundForAPIClients: only browsers get the page; a JSON client at / gets the
// 404 of every unknown path (PROTOCOL §5).
func TestRootIsNotFoundForAPIClients(t *testing.T) {
	h := homeServer(t)
	for _, tt := range []struct{ name, accept string }{
		{"no Accept", ""},
		{"JSON", "application/json"},
		{"anything", "*/*"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			headers := map[string]string{}
			if tt.accept != "" {
				headers["Accept"] = tt.accept
			}
			wantError(t, h.doWith(http.MethodGet, "/", "", headers), http.StatusNotFound, apperr.NotFound)
		})
	}
	wantError(t, h.doWith(http.MethodGet, "/nothing", "", map[string]string{"Accept": "text/html"}), http.StatusNotFound, apperr.NotFound)
}

func TestDocsAreServedAsText(t *testing.T) {
	h := homeServer(t)
	tests := []struct {
		path, contentType string
		status            int
	}{
		{"/docs/PROTOCOL.md", "text/plain; charset=utf-8", http.StatusOK},
		{"/docs/", "text/html; charset=utf-8", http.StatusOK},
		{"/docs", "", http.StatusFound},
		{"/docs/missing.md", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			rec := h.doWith(http.MethodGet, tt.path, "", nil)
			if rec.Code != tt.status {
				t.Fatalf("GET %s = %d, want %d", tt.path, rec.Code, tt.status)
			}
			if tt.contentType != "" && rec.Header().Get("Content-Type") != tt.contentType {
				t.Errorf("Content-Type = %q, want %q", rec.Header().Get("Content-Type"), tt.contentType)
			}
		})
	}
}
