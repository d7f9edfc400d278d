package http

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
)

// consoleRequest sends a request as a browser would: the given cookie and headers, from addr.
func consoleRequest(h *harness, method, path, body, remote string, cookie *http.Cookie, headers map[string]string) *httptest.ResponseRecorder {
	h.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if remote != "" {
		req.RemoteAddr = remote
	}
	req.Header.Set("Content-Type", "application/json")
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.srv.echo.ServeHTTP(rec, req)
	return rec
}

// signIn opens a console session and returns its cookie and CSRF token.
func signIn(t *testing.T, h *harness, remote string, headers map[string]string) (*http.Cookie, string) {
	t.Helper()
	rec := consoleRequest(h, "POST", "/console/session", `{"admin_key":"`+adminKey+`"}`, remote, nil, headers)
	if rec.Code != http.StatusOK {
		t.Fatalf("sign in: %d %s", rec.Code, rec.Body)
	}
	var s sessionJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || s.CSRFToken == "" {
		t.Fatalf("sign in body %s: %v", rec.Body, err)
	}
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != consoleCookie {
		t.Fatalf("cookies = %v", cookies)
	}
	return cookies[0], s.CSRFToken
}

func TestConsoleSignInRefusesWrongOrMissingKey(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	for _, tt := range []struct {
		name, body string
		status     int
		code       apperr.Code
	}{
		{"wrong key", `{"admin_key":"nope"}`, http.StatusUnauthorized, apperr.Unauthenticated},
		{"empty key", `{"admin_key":""}`, http.StatusBadRequest, apperr.InvalidArgument},
		{"not JSON", `admin_key=x`, http.StatusBadRequest, apperr.InvalidArgument},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := consoleRequest(h, "POST", "/console/session", tt.body, "", nil, nil)
			wantError(t, rec, tt.status, tt.code)
			if len(rec.Result().Cookies()) != 0 {
				t.Errorf("a refused sign-in set a cookie: %v", rec.Result().Cookies())
			}
		})
	}
	// A form post (what another site could make a browser send) is refused before the key is read.
	rec := consoleRequest(h, "POST", "/console/session", `{"admin_key":"`+adminKey+`"}`, "", nil,
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	wantError(t, rec, http.StatusBadRequest, apperr.InvalidArgument)
}

func TestConsoleCookieAttributes(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	for _, tt := range []struct {
		name    string
		remote  string
		headers map[string]string
		secure  bool
	}{
		{"plain HTTP", "", nil, false},
		{"loopback Nginx over TLS", "127.0.0.1:40000", map[string]string{"X-Forwarded-Proto": "https"}, true},
		{"forged proto from elsewhere", "203.0.113.9:40000", map[string]string{"X-Forwarded-Proto": "https"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ck, _ := signIn(t, h, tt.remote, tt.headers)
			if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Secure != tt.secure {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, Secure=%v", ck, tt.secure)
			}
		})
	}
}

func TestConsoleSessionStandsInForTheAdminKey(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	ck, csrf := signIn(t, h, "", nil)
	// A read needs the cookie only; an invalid topic answers 40001, so authentication passed.
	read := "/admin/v1/tenants/default/topics/bad!/messages/1"
	wantError(t, consoleRequest(h, "GET", read, "", "", ck, nil), http.StatusBadRequest, apperr.InvalidArgument)
	wantError(t, consoleRequest(h, "GET", read, "", "", nil, nil), http.StatusUnauthorized, apperr.Unauthenticated)
	wantError(t, consoleRequest(h, "GET", read, "", "", &http.Cookie{Name: consoleCookie, Value: "forged"}, nil),
		http.StatusUnauthorized, apperr.Unauthenticated)
	// A wrong bearer key is refused even with a valid cookie: the key, when sent, is what counts.
	wantError(t, consoleRequest(h, "GET", read, "", "", ck, map[string]string{"Authorization": "Bearer wrong"}),
		http.StatusUnauthorized, apperr.Unauthenticated)

	// A write also needs the session's CSRF token.
	write := "/admin/v1/tenants/default/users"
	body := `{"user_id":0}`
	wantError(t, consoleRequest(h, "POST", write, body, "", ck, nil), http.StatusForbidden, apperr.Forbidden)
	wantError(t, consoleRequest(h, "POST", write, body, "", ck, map[string]string{csrfHeader: "guess"}), http.StatusForbidden, apperr.Forbidden)
	wantError(t, consoleRequest(h, "POST", write, body, "", ck, map[string]string{csrfHeader: csrf}), http.StatusBadRequest, apperr.InvalidArgument)

	// The page reads its token back after a reload; signing out ends the session.
	rec := consoleRequest(h, "GET", "/console/session", "", "", ck, nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), csrf) {
		t.Fatalf("session info: %d %s", rec.Code, rec.Body)
	}
	wantError(t, consoleRequest(h, "DELETE", "/console/session", "", "", ck, nil), http.StatusForbidden, apperr.Forbidden)
	if rec := consoleRequest(h, "DELETE", "/console/session", "", "", ck, map[string]string{csrfHeader: csrf}); rec.Code != http.StatusOK {
		t.Fatalf("sign out: %d %s", rec.Code, rec.Body)
	}
	wantError(t, consoleRequest(h, "GET", read, "", "", ck, nil), http.StatusUnauthorized, apperr.Unauthenticated)
}

func TestConsoleAssetsAreEmbeddedWithACSP(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	for _, tt := range []struct{ path, want string }{
		{"/console/", `<script src="app.js" defer></script>`},
		{"/console/app.js", "X-CSRF-Token"},
		{"/console/style.css", "font:"},
	} {
		rec := consoleRequest(h, "GET", tt.path, "", "", nil, nil)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tt.want) {
			t.Errorf("GET %s = %d, body lacks %q", tt.path, rec.Code, tt.want)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy = %q", tt.path, csp)
		}
	}
	if rec := consoleRequest(h, "GET", "/console/missing.js", "", "", nil, nil); rec.Code != http.StatusNotFound {
		t.Errorf("missing asset: %d", rec.Code)
	}
}

// The page never builds markup from data: no innerHTML, outerHTML, insertAdjacentHTML or
// document.write anywhere in its script.
func TestConsoleScriptBuildsNoMarkupFromStrings(t *testing.T) {
	js, err := consoleAssets.ReadFile("console/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
}

func TestConsoleSignInIsRateLimitedPerAddress(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	for range signInsPerMinute {
		wantError(t, consoleRequest(h, "POST", "/console/session", `{"admin_key":"guess"}`, "203.0.113.7:1000", nil, nil),
			http.StatusUnauthorized, apperr.Unauthenticated)
	}
	// Over budget even the right key waits: guessing costs the guesser, not the server.
	wantError(t, consoleRequest(h, "POST", "/console/session", `{"admin_key":"`+adminKey+`"}`, "203.0.113.7:1000", nil, nil),
		http.StatusTooManyRequests, apperr.RateLimited)
	// Another address has its own budget.
	signIn(t, h, "203.0.113.8:1000", nil)
}
