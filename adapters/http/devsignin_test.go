package http

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/ports"
)

func keepShards(s *memory.ShardStore) ports.ShardStore { return s }

// TestDevSignInIsOffUnlessSwitchedOn: without the dev switch the route does not exist, so a
// production listener mints no token for anyone who asks (issue 31).
func TestDevSignInIsOffUnlessSwitchedOn(t *testing.T) {
	s := newStackOf(t, Config{AdminKey: adminKey}, keepShards)
	s.seed()
	rec := s.doWith("POST", "/dev/v1/tenants/default/signin", `{"user_id":1}`, nil)
	if rec.Code != http.StatusNotFound {
		t.Fatalf("dev sign-in without the switch = %d %s, want 404", rec.Code, rec.Body)
	}
}

func TestDevSignIn(t *testing.T) {
	s := newStackOf(t, Config{AdminKey: adminKey, DevSignIn: true}, keepShards)
	s.seed()
	for _, tc := range []struct {
		name, body string
		status     int
		code       apperr.Code
		user       int64
	}{
		{name: "known user by id", body: `{"user_id":2}`, status: 200, user: 2},
		{name: "unknown user without a name", body: `{"user_id":77}`, status: 404, code: apperr.NotFound},
		{name: "new user with a name", body: `{"user_id":78,"nickname":"Dora"}`, status: 200, user: 78},
		{name: "no id", body: `{}`, status: 400, code: apperr.InvalidArgument},
		{name: "bad id", body: `{"user_id":-1,"nickname":"x"}`, status: 400, code: apperr.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := s.doWith("POST", "/dev/v1/tenants/default/signin", tc.body, nil)
			if tc.status != http.StatusOK {
				wantError(t, rec, tc.status, tc.code)
				return
			}
			var got devSignInJSON
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
				t.Fatalf("= %d %s", rec.Code, rec.Body)
			}
			id, err := s.tokens.Verify(got.Token)
			if err != nil || id.UserID != tc.user || id.Tenant != "default" || got.UserID != tc.user {
				t.Errorf("token for %+v (%v), body user %d; want user %d of default", id, err, got.UserID, tc.user)
			}
		})
	}
	// The name given creates the user the directory then knows.
	rec := s.doWith("POST", "/dev/v1/tenants/default/signin", `{"user_id":78}`, nil)
	if rec.Code != http.StatusOK {
		t.Errorf("signing in again as the new user = %d %s", rec.Code, rec.Body)
	}
	wantError(t, s.doWith("POST", "/dev/v1/tenants/nope/signin", `{"user_id":2}`, nil), 404, apperr.NotFound)
}
