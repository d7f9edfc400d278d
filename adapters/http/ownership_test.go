package http

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
)

func TestGroupHandover(t *testing.T) {
	s := newClientStack(t)
	owner, admin, member := s.user("default", 1), s.user("default", 2), s.user("default", 3)
	s.user("default", 4)
	g := s.ok(owner, "POST", "/api/v1/groups", `{"group_id":7,"members":[2,3]}`)
	if g["group_id"] != 7.0 {
		t.Fatalf("group = %v", g)
	}
	s.ok(owner, "PUT", "/api/v1/groups/7/members/2/role", `{"role":"admin"}`)

	s.fails(owner, "DELETE", "/api/v1/groups/7/members/1", "", http.StatusForbidden, apperr.Forbidden)
	s.fails(admin, "PUT", "/api/v1/groups/7/owner", `{"user_id":3}`, http.StatusForbidden, apperr.Forbidden)
	s.fails(owner, "PUT", "/api/v1/groups/7/owner", `{"user_id":4}`, http.StatusNotFound, apperr.NotFound)
	s.fails(owner, "PUT", "/api/v1/groups/7/owner", `{"user_id":1}`, http.StatusBadRequest, apperr.InvalidArgument)
	s.fails(owner, "PUT", "/api/v1/groups/7/owner", `{}`, http.StatusBadRequest, apperr.InvalidArgument)
	if got := s.ok(owner, "PUT", "/api/v1/groups/7/owner", `{"user_id":3}`); got["owner"] != 3.0 || got["group_id"] != 7.0 {
		t.Fatalf("handover = %v", got)
	}
	s.ok(owner, "DELETE", "/api/v1/groups/7/members/1", "") // an admin now, so it may leave
	s.ok(member, "PUT", "/api/v1/groups/7/mute_all", `{"mute_all":true}`)
	if g := s.ok(member, "GET", "/api/v1/groups/7", ""); g["owner"] != 3.0 || g["mute_all"] != true {
		t.Fatalf("group after the handover = %v", g)
	}

	// Operators hand over whoever owns the group.
	rec := s.do("PUT", "/admin/v1/tenants/default/groups/7/owner", `{"user_id":2}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("admin handover = %d %s", rec.Code, rec.Body)
	}
	if g := s.ok(admin, "GET", "/api/v1/groups/7", ""); g["owner"] != 2.0 {
		t.Fatalf("group after the admin handover = %v", g)
	}
	wantError(t, s.do("PUT", "/admin/v1/tenants/default/groups/8/owner", `{"user_id":2}`), http.StatusNotFound, apperr.NotFound)
}

func TestStatsRanges(t *testing.T) {
	s := newClientStack(t)
	tests := []struct {
		query  string
		status int
	}{
		{"", http.StatusOK},
		{"?from=2030-03-01&to=2030-03-31", http.StatusOK},
		{"?from=203003&to=203004", http.StatusOK},
		{"?from=203003&to=2030-03-15", http.StatusOK},
		{"?to=2030-03-01", http.StatusOK},
		{"?from=2030-02-30", http.StatusBadRequest},
		{"?from=2030-03-02&to=2030-03-01", http.StatusBadRequest},
		{"?from=1999-12-31", http.StatusBadRequest},
		{"?to=30300101", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			rec := s.do("GET", "/admin/v1/tenants/default/stats"+tt.query, "")
			if tt.status != http.StatusOK {
				wantError(t, rec, tt.status, apperr.InvalidArgument)
				return
			}
			var out struct {
				Months []any `json:"months"`
				Days   []any `json:"days"`
			}
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.Months == nil || out.Days == nil {
				t.Fatalf("stats = %d %s; want months and days, empty or not", rec.Code, rec.Body)
			}
		})
	}
}
