package redis

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/delivery"
)

func TestDeliverUndecodableJobGoesToDeadLetters(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	k, _ := KeysOf(tenant)
	if err := c.Do(t.Context(), c.B().Rpush().Key(k.DeliverQueue()).Element("{not json").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	q := NewDeliverQueue(c)
	if _, ok, err := q.Take(t.Context(), tenant, 0, time.Second); err == nil || ok {
		t.Fatalf("Take of garbage = %v, %v; want an error", ok, err)
	}
	if got := lrange(t, c, k.DeliverDead(0)); len(got) != 1 || got[0] != "{not json" {
		t.Fatalf("dead letters = %q; want the garbage entry", got)
	}
	if got := lrange(t, c, k.DeliverProcessing()); len(got) != 0 {
		t.Fatalf("processing = %q; want empty", got)
	}
}

func TestDeliverDeadLetterKeepsTheJob(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	k, _ := KeysOf(tenant)
	q := NewDeliverQueue(c)
	if err := q.Push(t.Context(), delivery.Job{Tenant: tenant, Kind: delivery.KindRead, MsgID: 5, Topic: "grp_1"}); err != nil {
		t.Fatal(err)
	}
	job, ok, err := q.Take(t.Context(), tenant, 0, time.Second)
	if err != nil || !ok {
		t.Fatalf("Take = %v, %v", ok, err)
	}
	if dead, err := q.Retry(t.Context(), job, 1); err != nil || !dead {
		t.Fatalf("Retry = %v, %v; want dead", dead, err)
	}
	dead := lrange(t, c, k.DeliverDead(0))
	if len(dead) != 1 {
		t.Fatalf("dead letters = %q; want one job", dead)
	}
	var got delivery.Job
	if err := json.Unmarshal([]byte(dead[0]), &got); err != nil || got.MsgID != 5 || got.Attempts != 1 {
		t.Fatalf("dead letter = %+v, %v; want job 5 with 1 attempt", got, err)
	}
}

func TestDeliverRequeueMovesMoreThanOneBatch(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	k, _ := KeysOf(tenant)
	n := requeueBatch*2 + 7
	items := make([]string, n)
	for i := range items {
		items[i] = string(rune('a'+i%26)) + string(rune('0'+i%10))
	}
	if err := c.Do(t.Context(), c.B().Rpush().Key(k.DeliverProcessing()).Element(items...).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(t.Context(), c.B().Rpush().Key(k.DeliverQueue()).Element("later").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	moved, err := NewDeliverQueue(c).RequeueStale(t.Context(), tenant)
	if err != nil || moved != n {
		t.Fatalf("RequeueStale = %d, %v; want %d", moved, err, n)
	}
	got := lrange(t, c, k.DeliverQueue())
	want := append(items, "later")
	if len(got) != len(want) {
		t.Fatalf("queue has %d entries; want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("queue[%d] = %q; want %q (order lost)", i, got[i], want[i])
		}
	}
}

func TestDeliverMarkDoneExpires(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	k, _ := KeysOf(tenant)
	q := NewDeliverQueue(c)
	if first, err := q.MarkDone(t.Context(), tenant, time.Hour, "m1"); err != nil || !first[0] {
		t.Fatalf("MarkDone = %v, %v", first, err)
	}
	if got := pttl(t, c, k.DeliverDone("m1")); got < 59*time.Minute || got > time.Hour {
		t.Fatalf("PTTL = %v; want about an hour", got)
	}
	if first, err := q.MarkDone(t.Context(), tenant, 20*time.Millisecond, "m2"); err != nil || !first[0] {
		t.Fatalf("MarkDone = %v, %v", first, err)
	}
	// Wait on the key itself: PTTL -2 once Redis has expired it.
	for deadline := time.Now().Add(5 * time.Second); pttl(t, c, k.DeliverDone("m2")) != -2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the done mark never expired")
		}
	}
	if first, err := q.MarkDone(t.Context(), tenant, time.Minute, "m2"); err != nil || !first[0] {
		t.Fatalf("MarkDone after expiry = %v, %v; want first again", first, err)
	}
}

func TestDeliverTakeHonoursCancel(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, ok, err := NewDeliverQueue(c).Take(ctx, tenant, 0, 10*time.Second); err == nil || ok {
		t.Fatalf("Take = %v, %v; want the context error", ok, err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("Take returned %v after its context ended", waited)
	}
}

func lrange(t *testing.T, c rueidis.Client, key string) []string {
	t.Helper()
	v, err := c.Do(t.Context(), c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("LRANGE %s: %v", key, err)
	}
	return v
}
