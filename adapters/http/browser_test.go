package http

import (
	"net/http"
	"strings"
	"testing"
)

// TestChatPolicy: the web chat's page runs only its own files, connects only to its own
// origin, and takes no string as code (issue 33).
func TestChatPolicy(t *testing.T) {
	h := homeServer(t)
	rec := h.doWith(http.MethodGet, "/chat/", "", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /chat/ = %d %s", rec.Code, rec.Body)
	}
	directives := map[string]string{}
	for d := range strings.SplitSeq(rec.Header().Get("Content-Security-Policy"), ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	for name, want := range map[string]string{
		"default-src":               "'none'",
		"script-src":                "'self'",
		"style-src":                 "'self'",
		"connect-src":               "'self'",
		"object-src":                "'none'",
		"frame-ancestors":           "'none'",
		"base-uri":                  "'none'",
		"form-action":               "'none'",
		"require-trusted-types-for": "'script'",
	} {
		if got := directives[name]; got != want {
			t.Errorf("%s = %q, want %q (policy %q)", name, got, want, rec.Header().Get("Content-Security-Policy"))
		}
	}
	for name, want := range map[string]string{
		"X-Content-Type-Options":     "nosniff",
		"Referrer-Policy":            "no-referrer",
		"Cross-Origin-Opener-Policy": "same-origin",
	} {
		if got := rec.Header().Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}
