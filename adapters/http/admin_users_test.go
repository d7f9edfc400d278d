package http

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
)

// TestAdminDisablesEnablesAndDeletesUsers drives the user status routes of docs/openapi.yaml
// and what the client API makes of them: a disabled or deleted user's token is 40101, the
// same token works again once enabled, a deleted user is final, and P2P sends to it are 40401
// (DESIGN §8.1).
func TestAdminDisablesEnablesAndDeletesUsers(t *testing.T) {
	s := newClientStack(t)
	a, b := s.user("default", 1), s.user("default", 2)
	s.ok(a, "POST", "/api/v1/friends/requests", `{"user_id":2}`)
	s.ok(b, "POST", "/api/v1/friends/requests/1/accept", "")
	const base = "/admin/v1/tenants/default/users/"
	status := func(method, path, body string, want int, wantStatus string) {
		t.Helper()
		rec := s.do(method, base+path, body)
		if rec.Code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, rec.Code, rec.Body, want)
		}
		if want != http.StatusOK {
			return
		}
		var got userStatusJSON
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Status != wantStatus {
			t.Fatalf("%s %s: %s, want status %s", method, path, rec.Body, wantStatus)
		}
	}
	send := `{"to_user":1,"client_msg_id":"c1","type":"text","content":{"text":"hi"}}`

	status("GET", "1/status", "", http.StatusOK, "active")
	status("PUT", "1/status", `{"status":"disabled"}`, http.StatusOK, "disabled")
	status("GET", "1/status", "", http.StatusOK, "disabled")
	s.fails(a, "GET", "/api/v1/me", "", http.StatusUnauthorized, apperr.Unauthenticated)
	s.ok(b, "POST", "/api/v1/messages", send) // a disabled user still receives, and syncs once enabled

	status("PUT", "1/status", `{"status":"active"}`, http.StatusOK, "active")
	s.ok(a, "GET", "/api/v1/me", "")

	status("DELETE", "1", "", http.StatusOK, "deleted")
	status("DELETE", "1", "", http.StatusOK, "deleted")
	s.fails(a, "GET", "/api/v1/me", "", http.StatusUnauthorized, apperr.Unauthenticated)
	s.fails(b, "POST", "/api/v1/messages", send, http.StatusNotFound, apperr.NotFound)
	for _, c := range []struct {
		method, path, body string
		status             int
		code               apperr.Code
	}{
		{"PUT", base + "1/status", `{"status":"active"}`, http.StatusConflict, apperr.Conflict},
		{"PUT", base + "1/status", `{"status":"disabled"}`, http.StatusConflict, apperr.Conflict},
		{"POST", "/admin/v1/tenants/default/users", `{"user_id":1}`, http.StatusConflict, apperr.Conflict},
		{"PUT", base + "2/status", `{"status":"deleted"}`, http.StatusBadRequest, apperr.InvalidArgument},
		{"PUT", base + "9/status", `{"status":"disabled"}`, http.StatusNotFound, apperr.NotFound},
		{"GET", base + "9/status", "", http.StatusNotFound, apperr.NotFound},
		{"DELETE", base + "9", "", http.StatusNotFound, apperr.NotFound},
	} {
		wantError(t, s.do(c.method, c.path, c.body), c.status, c.code)
	}
}
