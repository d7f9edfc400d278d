package deliver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/kit/inflight"
)

// TestAGapWhoseRetryRunsOnAnotherNodeIsWaitedFor: node B consumes grp_10 while node A sends
// seq 1 and seq 2. Seq 2 is queued; seq 1's client timed out and retried on node C, which
// re-marks the seq pending. Node B sees neither send in its own in-flight set, and the send
// bound has passed since seq 2 was queued: without the cluster-wide mark it gave the gap up
// and delivered 2 before 1.
func TestAGapWhoseRetryRunsOnAnotherNodeIsWaitedFor(t *testing.T) {
	const (
		requestTimeout = 3 * time.Second
		sendBound      = requestTimeout + time.Second
	)
	f := newFixture(t)
	f.pusher.online = map[int64][]uint64{2: {5}}
	ctx := t.Context()

	// The shared Redis: one allocator every node's send path and node B's consumer use.
	months := memory.NewMonthState(f.clock.Now)
	m := month.Of(f.clock.Now())
	if err := months.MarkReady(ctx, tenant, 0, m); err != nil {
		t.Fatal(err)
	}
	if _, err := months.Advance(ctx, tenant, 0, m); err != nil {
		t.Fatal(err)
	}
	shared := memory.NewSeqAllocator(months, f.clock.Now)
	if err := shared.Reseed(ctx, tenant, "grp_10", 0); err != nil {
		t.Fatal(err)
	}
	allocate := func(clientMsgID, attempt string) seq.Allocation {
		t.Helper()
		a, err := shared.Allocate(ctx, tenant, seq.Request{Topic: "grp_10", From: 1, ClientMsgID: clientMsgID,
			MsgID: 9000 + int64(len(attempt)), Hash: "h-" + clientMsgID, Attempt: attempt, PendingFor: requestTimeout})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	// Node B: other nodes consume the tenant too, so gaps wait the send bound.
	queue := newIdleWatch(f.partitioned(t, consumerPartitions))
	b := f.newWorkers(Config{MaxAttempts: 3, DoneTTL: time.Minute, TakeTimeout: 20 * time.Millisecond,
		ReorderWait: consumerWait, SendBound: sendBound}, queue)
	held := map[int]bool{}
	for p := range consumerPartitions {
		held[p] = true
	}
	b.d.Owner = &owner{held: held, surplus: map[int]bool{}}
	b.d.InFlight = inflight.New() // node B sends nothing itself
	b.d.Pending = shared
	if err := b.Start(context.Background(), []string{tenant}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})

	// Node A: seq 1's send stalls; seq 2's is stored and queued.
	if a := allocate("c1", "a-1"); a.Seq != 1 {
		t.Fatalf("first allocation %+v, want seq 1", a)
	}
	if a := allocate("c2", "a-2"); a.Seq != 2 {
		t.Fatalf("second allocation %+v, want seq 2", a)
	}
	job2 := f.messageIn(10, 2)
	job2.QueuedAt = f.clock.Now().UnixMilli()
	pushAll(t, queue, job2)
	if err := shared.Settle(ctx, tenant, "grp_10", 2, "a-2"); err != nil {
		t.Fatal(err)
	}
	queue.settled(t)

	// Seq 1's client times out and retries on node C, which gets the same seq.
	f.clock.Advance(requestTimeout - 500*time.Millisecond)
	if a := allocate("c1", "c-1"); a.Seq != 1 || !a.Existing {
		t.Fatalf("retry allocation %+v, want the existing seq 1", a)
	}
	// Node A's attempt is over (its mark expired), the bound since seq 2 was queued has passed,
	// and the retry still runs.
	f.clock.Advance(sendBound - requestTimeout + time.Second)
	queue.settled(t)
	// A look that finds no send running gives the gap up once the consumer has caught up a
	// moment later.
	f.clock.Advance(10 * time.Millisecond)
	queue.settled(t)
	if got := f.messagesOf(); len(got) != 0 {
		t.Fatalf("pushed %v while the retry of seq 1 still ran on another node", got)
	}

	// Node C stores and queues seq 1: both go out, in order.
	pushAll(t, queue, f.messageIn(10, 1))
	if err := shared.Settle(ctx, tenant, "grp_10", 1, "c-1"); err != nil {
		t.Fatal(err)
	}
	if got := f.waitMessages(t, 2); !slices.Equal(got, []string{"grp_10/1", "grp_10/2"}) {
		t.Fatalf("pushed %v; want seqs 1 then 2", got)
	}
}
