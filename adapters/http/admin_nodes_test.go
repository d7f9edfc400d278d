package http

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/presence"
)

func TestAdminNodesListLiveInstancesWithPartitionsAndDevices(t *testing.T) {
	ctx := t.Context()
	n := memory.NewNodes(time.Now)
	q, err := memory.NewDeliverQueue(time.Now).WithPartitions(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"1-aa", "2-bb"} {
		if _, _, _, err := n.Renew(ctx, "default", node, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := n.Claim(ctx, "default", presence.Entry{User: 5, Device: 1, Node: "2-bb", Token: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Send(ctx, "default", "2-bb", 10, []byte("x")); err != nil {
		t.Fatal(err)
	}
	for p, node := range []string{"1-aa", "2-bb"} {
		if held, _, err := q.Hold(ctx, "default", p, node, time.Minute); err != nil || !held {
			t.Fatalf("Hold %d = %v, %v", p, held, err)
		}
	}
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{Nodes: NodeOps{Inspect: n, Holders: q}})

	rec := h.do("GET", "/admin/v1/tenants/default/nodes", "")
	var got nodesJSON
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
		t.Fatalf("GET nodes = %d %s", rec.Code, rec.Body)
	}
	if len(got.Nodes) != 2 || !slices.Equal(got.Unheld, []int{2}) {
		t.Fatalf("GET nodes = %s", rec.Body)
	}
	for i, want := range []nodeJSON{
		{Name: "1-aa", NodeID: "1", Partitions: []int{0}},
		{Name: "2-bb", NodeID: "2", Devices: 1, PushBacklog: 1, Partitions: []int{1}},
	} {
		g := got.Nodes[i]
		if g.Name != want.Name || g.NodeID != want.NodeID || g.Devices != want.Devices || g.PushBacklog != want.PushBacklog ||
			!slices.Equal(g.Partitions, want.Partitions) || g.LeaseLeftMS <= 0 || g.LeaseUntil <= time.Now().UnixMilli() {
			t.Errorf("node %d = %+v; want %+v with a running lease", i, g, want)
		}
	}

	empty := newHarness(t, Config{AdminKey: adminKey}, Deps{Nodes: NodeOps{Inspect: memory.NewNodes(time.Now), Holders: q}})
	if err := q.Release(ctx, "default", 0, "1-aa"); err != nil {
		t.Fatal(err)
	}
	rec = empty.do("GET", "/admin/v1/tenants/default/nodes", "")
	if rec.Code != http.StatusOK || rec.Body.String() != "{\"nodes\":[],\"unheld_partitions\":[0,1,2]}\n" {
		t.Fatalf("GET nodes without live nodes = %d %s", rec.Code, rec.Body)
	}
	off := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	wantError(t, off.do("GET", "/admin/v1/tenants/default/nodes", ""), http.StatusServiceUnavailable, apperr.Busy)
}
