package http

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
)

func TestAdminDeliveryDepthsAndDeadLetterRequeue(t *testing.T) {
	q, err := memory.NewDeliverQueue(time.Now).WithPartitions(2)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i := range 3 {
		if err := q.Push(ctx, delivery.Job{Tenant: "default", Kind: delivery.KindMessage, MsgID: int64(i + 1), Topic: "grp_1"}); err != nil {
			t.Fatal(err)
		}
	}
	p := delivery.PartitionOf("grp_1", 2)
	job, ok, err := q.Take(ctx, "default", p, 0)
	if err != nil || !ok {
		t.Fatalf("Take = %v, %v", ok, err)
	}
	if dead, err := q.Retry(ctx, job, 1); err != nil || !dead {
		t.Fatalf("Retry = %v, %v", dead, err)
	}
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{Delivery: q})

	rec := h.do("GET", "/admin/v1/tenants/default/delivery", "")
	var got deliveryJSON
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
		t.Fatalf("GET delivery = %d %s", rec.Code, rec.Body)
	}
	if len(got.Partitions) != 2 || got.Dead != 1 || got.Partitions[p].Queued != 2 || got.Partitions[p].OldestQueuedAt == 0 ||
		got.Partitions[1-p].Queued != 0 || got.Partitions[1-p].LagMS != 0 {
		t.Fatalf("GET delivery = %+v", got)
	}

	for _, body := range []string{`{"max":0}`, `{"max":10001}`, `{"max":"x"}`} {
		wantError(t, h.do("POST", "/admin/v1/tenants/default/delivery/dead/requeue", body), http.StatusBadRequest, apperr.InvalidArgument)
	}
	rec = h.do("POST", "/admin/v1/tenants/default/delivery/dead/requeue", "")
	if rec.Code != http.StatusOK || rec.Body.String() != "{\"requeued\":1}\n" {
		t.Fatalf("requeue = %d %s", rec.Code, rec.Body)
	}

	off := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	wantError(t, off.do("GET", "/admin/v1/tenants/default/delivery", ""), http.StatusServiceUnavailable, apperr.Busy)
}
