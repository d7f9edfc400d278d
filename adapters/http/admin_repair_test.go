package http

import (
	"net/http"
	"slices"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
)

func TestAdminRouteRepairBacklogAndDrain(t *testing.T) {
	s := newShardStack(t)
	if err := s.srv.d.Shards.Repair.Enqueue(t.Context(), "default", "grp_1"); err != nil {
		t.Fatal(err)
	}
	var b repairBacklogJSON
	s.call("GET", "/routes/repair", "", &b)
	if b.Queued != 1 || b.InProcess != 0 || !slices.Equal(b.Topics, []string{"grp_1"}) {
		t.Fatalf("backlog = %+v; want grp_1 queued", b)
	}
	var drained struct {
		Repaired int `json:"repaired"`
	}
	s.call("POST", "/routes/repair/drain", "", &drained)
	if drained.Repaired != 1 {
		t.Fatalf("drain repaired %d; want 1", drained.Repaired)
	}
	s.call("GET", "/routes/repair", "", &b)
	if b.Queued != 0 || len(b.Topics) != 0 {
		t.Fatalf("backlog after drain = %+v", b)
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x"} {
		wantError(t, s.do("GET", "/admin/v1/tenants/default/routes/repair"+q, ""), http.StatusBadRequest, apperr.InvalidArgument)
	}
}
