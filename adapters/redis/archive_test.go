package redis

import (
	"context"
	"testing"

	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
)

func TestRemoveMonthDropsOneSegment(t *testing.T) {
	c := testClient(t)
	tenant, ctx := testTenant(t, c), context.Background()
	rc := NewRouteCache(c)
	rt := route.Route{
		{Month: 203101, MinSeq: 1, MaxSeq: 10, Count: 10},
		{Month: 203102, MinSeq: 11, MaxSeq: 20, Count: 10},
	}
	if err := rc.Replace(ctx, tenant, "grp_1", rt); err != nil {
		t.Fatal(err)
	}
	if err := rc.RemoveMonth(ctx, tenant, "grp_1", 203101); err != nil {
		t.Fatal(err)
	}
	got, found, err := rc.Segments(ctx, tenant, "grp_1")
	if err != nil || !found || len(got) != 1 || got[0].Month != 203102 || got[0].MaxSeq != 20 {
		t.Fatalf("after removing 203101: %v %v %v", got, found, err)
	}
	if err := rc.RemoveMonth(ctx, tenant, "grp_1", 203102); err != nil {
		t.Fatal(err)
	}
	if got, found, err := rc.Segments(ctx, tenant, "grp_1"); err != nil || found {
		t.Fatalf("after removing every month: %v %v %v", got, found, err)
	}
	k, _ := topicKeys(tenant, "grp_1")
	for _, key := range []string{k.Route("grp_1"), k.RouteMeta("grp_1")} {
		if n, err := c.Do(ctx, c.B().Exists().Key(key).Build()).AsInt64(); err != nil || n != 0 {
			t.Fatalf("%s still exists: %d %v", key, n, err)
		}
	}
}

func TestMonthBacklogCountsEveryPartitionAndDeadLetters(t *testing.T) {
	c := testClient(t)
	tenant, ctx := testTenant(t, c), context.Background()
	one := NewDeliverQueue(c)
	four, err := one.WithPartitions(4)
	if err != nil {
		t.Fatal(err)
	}
	job := func(topic string, m month.Month) delivery.Job {
		msg := message.Message{Topic: topic, Seq: 1, MsgID: 1, Month: m}
		return delivery.Job{Tenant: tenant, MsgID: 1, Topic: topic, Message: &msg}
	}
	for _, j := range []struct {
		q   *DeliverQueue
		job delivery.Job
	}{
		{one, job("grp_1", 203101)}, {four, job("grp_2", 203101)}, {four, job("grp_3", 203101)}, {four, job("grp_4", 203102)},
	} {
		if err := j.q.Push(ctx, j.job); err != nil {
			t.Fatal(err)
		}
	}
	taken, ok, err := one.Take(ctx, tenant, 0, 0)
	if err != nil || !ok {
		t.Fatalf("take: %v %v", ok, err)
	}
	if dead, err := one.Retry(ctx, taken, 1); err != nil || !dead {
		t.Fatalf("retry to dead letters: %v %v", dead, err)
	}
	got, err := four.MonthBacklog(ctx, tenant, 203101)
	if err != nil || got != (archive.Backlog{Queued: 2, Dead: 1}) {
		t.Fatalf("backlog of 203101: %+v %v", got, err)
	}
	got, err = four.MonthBacklog(ctx, tenant, 203103)
	if err != nil || !got.Empty() {
		t.Fatalf("backlog of an idle month: %+v %v", got, err)
	}
}
