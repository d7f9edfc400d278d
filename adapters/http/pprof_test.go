package http

import (
	"net/http"
	"strings"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
)

func TestProfilesNeedTheAdminKey(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	tests := []struct {
		method, path string
		contains     string // in the body when the key is right
	}{
		{http.MethodGet, "/debug/pprof/", "goroutine"},
		{http.MethodGet, "/debug/pprof/goroutine?debug=1", "goroutine profile"},
		{http.MethodGet, "/debug/pprof/heap?debug=1", "heap profile"},
		{http.MethodGet, "/debug/pprof/allocs?debug=1", "heap profile"},
		{http.MethodGet, "/debug/pprof/cmdline", ""},
		{http.MethodGet, "/debug/pprof/symbol", "num_symbols"},
		{http.MethodGet, "/debug/pprof/profile?seconds=1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			wantError(t, h.doWith(tt.method, tt.path, "", nil), http.StatusUnauthorized, apperr.Unauthenticated)
			wantError(t, h.doWith(tt.method, tt.path, "", map[string]string{"Authorization": "Bearer wrong"}), http.StatusUnauthorized, apperr.Unauthenticated)
			rec := h.do(tt.method, tt.path, "")
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tt.contains) {
				t.Fatalf("%s %s with the key = %d %.200q; want 200 with %q", tt.method, tt.path, rec.Code, rec.Body, tt.contains)
			}
		})
	}
}
