package send_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/kit/inflight"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

const tenant = "t1"

type fixture struct {
	clock    *memory.Clock
	shards   *memory.ShardStore
	store    *memory.MessageStore
	months   *memory.MonthState
	seqs     *memory.SeqAllocator
	queue    *flakyQueue
	dir      *memory.Directory
	metrics  *memory.Metrics
	manager  *shardmanager.Manager
	inflight *inflight.Sends
	svc      *send.Service
	group    string
}

// flakyQueue fails Push while down is set, like a Redis outage after COMMIT.
type flakyQueue struct {
	*memory.DeliverQueue
	mu     sync.Mutex
	down   bool
	onPush func(delivery.Job) // if set, sees every job pushed
}

func (q *flakyQueue) Push(ctx context.Context, job delivery.Job) error {
	q.mu.Lock()
	down, onPush := q.down, q.onPush
	q.mu.Unlock()
	if down {
		return errors.New("redis down")
	}
	if onPush != nil {
		onPush(job)
	}
	return q.DeliverQueue.Push(ctx, job)
}

func (q *flakyQueue) setDown(v bool) { q.mu.Lock(); q.down = v; q.mu.Unlock() }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{clock: memory.NewClock(time.Date(2026, 9, 30, 23, 59, 0, 0, time.UTC))}
	f.shards = memory.NewShardStore()
	f.store = memory.NewMessageStore(f.shards)
	f.months = memory.NewMonthState(f.clock.Now)
	f.seqs = memory.NewSeqAllocator(f.months, f.clock.Now)
	f.queue = &flakyQueue{DeliverQueue: memory.NewDeliverQueue(f.clock.Now)}
	f.inflight = inflight.New()
	f.dir = memory.NewDirectory()
	f.metrics = memory.NewMetrics()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids := memory.NewIDs(f.clock)
	f.manager = shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{
		Store: f.shards, Months: f.months, Metrics: f.metrics, Log: log, Sleep: f.clock.Sleep,
	})
	if err := f.manager.Ensure(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	members := membership.New(f.dir, f.clock, time.Second)
	f.svc = send.New(send.Config{MsgIDWindow: 5 * time.Minute, PendingFor: 10 * time.Second}, send.Deps{
		Seq: f.seqs, Store: f.store, Queued: f.store, FollowUp: f.followUp(memory.NewRouteCache(), nil), IDs: ids, Clock: f.clock,
		Metrics: f.metrics, Resolver: conversation.NewResolver(f.dir, ids, members), Log: log,
		Months: f.manager, InFlight: f.inflight,
		Pending: f.seqs,
	})
	for _, u := range []int64{1, 2, 3} {
		if err := f.dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := f.dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 5000, []int64{1, 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.group = c.Topic
	return f
}

// followUp is the memory follow-up after COMMIT over the fixture's queue and allocator, with
// routes and hot (nil: no hot cache).
func (f *fixture) followUp(routes ports.RouteCache, hot memory.HotWriter) *memory.CommitFollowUp {
	return &memory.CommitFollowUp{Routes: routes, Hot: hot, Queue: f.queue, Seqs: f.seqs, Pending: f.seqs}
}

func (f *fixture) send(from int64, addr conversation.Address, clientID, text string) (send.Result, error) {
	content, _ := json.Marshal(map[string]string{"text": text})
	return f.svc.Send(context.Background(), send.Request{
		Tenant: tenant, From: from, FromDevice: 1, Address: addr,
		Draft: message.Draft{ClientMsgID: clientID, Type: "text", Content: content},
	})
}

func TestSendAssignsContinuousSeqsAndEnqueues(t *testing.T) {
	f := newFixture(t)
	for i := 1; i <= 5; i++ {
		res, err := f.send(1, conversation.Address{Topic: f.group}, fmt.Sprint("c", i), "hi")
		if err != nil {
			t.Fatal(err)
		}
		if res.Message.Seq != int64(i) || res.Message.ConversationID != 5000 || res.Message.Month != 202609 {
			t.Fatalf("send %d: %+v", i, res.Message)
		}
	}
	for i := 1; i <= 5; i++ {
		job, ok, err := f.queue.Take(context.Background(), tenant, 0, 0)
		if err != nil || !ok || job.Message.Seq != int64(i) || job.ExcludeDevice != 1 {
			t.Fatalf("job %d: %+v ok=%v err=%v", i, job, ok, err)
		}
	}
}

func TestSendRetryIsIdempotent(t *testing.T) {
	f := newFixture(t)
	first, err := f.send(1, conversation.Address{Topic: f.group}, "same", "hi")
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.send(1, conversation.Address{Topic: f.group}, "same", "hi")
	if err != nil || again.Message.Seq != first.Message.Seq || again.Message.MsgID != first.Message.MsgID {
		t.Fatalf("retry: %+v, %v", again.Message, err)
	}
	if _, err := f.send(1, conversation.Address{Topic: f.group}, "same", "other text"); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("reuse with other content: %v", err)
	}
	next, err := f.send(1, conversation.Address{Topic: f.group}, "next", "hi")
	if err != nil || next.Message.Seq != 2 {
		t.Fatalf("a retry must not consume a seq: %+v %v", next.Message, err)
	}
}

func TestSendRetryAcrossMonthBoundaryKeepsItsMonth(t *testing.T) {
	f := newFixture(t)
	first, err := f.send(1, conversation.Address{Topic: f.group}, "edge", "hi")
	if err != nil || first.Message.Month != 202609 {
		t.Fatalf("%+v %v", first.Message, err)
	}
	f.clock.Set(time.Date(2026, 10, 1, 0, 0, 1, 0, time.UTC))
	if err := f.manager.Ensure(context.Background(), tenant); err != nil {
		t.Fatal(err)
	}
	again, err := f.send(1, conversation.Address{Topic: f.group}, "edge", "hi")
	if err != nil || again.Message.Month != 202609 || again.Message.Seq != first.Message.Seq {
		t.Fatalf("retry after the boundary: %+v %v", again.Message, err)
	}
	next, err := f.send(1, conversation.Address{Topic: f.group}, "new", "hi")
	if err != nil || next.Message.Month != 202610 || next.Message.Seq != 2 {
		t.Fatalf("new message after the boundary: %+v %v", next.Message, err)
	}
}

func TestQueueDownMeansNoAckAndRetryConverges(t *testing.T) {
	f := newFixture(t)
	f.queue.setDown(true)
	_, err := f.send(1, conversation.Address{Topic: f.group}, "q", "hi")
	if apperr.CodeOf(err) != apperr.Busy {
		t.Fatalf("enqueue failure must be 50301, got %v", err)
	}
	f.queue.setDown(false)
	res, err := f.send(1, conversation.Address{Topic: f.group}, "q", "hi")
	if err != nil || res.Message.Seq != 1 {
		t.Fatalf("retry after outage: %+v %v", res.Message, err)
	}
	msgs, err := f.store.Page(context.Background(), tenant, 202609, message.PageQuery{Topic: f.group, Limit: 10, IncludeDeleted: true})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("exactly one stored message expected, got %d (%v)", len(msgs), err)
	}
}

func TestLostCounterIsReseededFromStore(t *testing.T) {
	f := newFixture(t)
	for i := range 3 {
		if _, err := f.send(1, conversation.Address{Topic: f.group}, fmt.Sprint("c", i), "hi"); err != nil {
			t.Fatal(err)
		}
	}
	f.seqs.Forget(tenant) // Redis FLUSHALL
	f.months.Forget(tenant)
	res, err := f.send(1, conversation.Address{Topic: f.group}, "after-flush", "hi")
	if err != nil || res.Message.Seq != 4 {
		t.Fatalf("seq after losing Redis must continue at 4: %+v %v", res.Message, err)
	}
	// The old client_msg_id is no longer known to Redis, but the store's dedup keeps one message.
	res, err = f.send(1, conversation.Address{Topic: f.group}, "c0", "hi")
	if err != nil || res.Message.Seq != 1 {
		t.Fatalf("retry of an old message after the flush must return seq 1: %+v %v", res.Message, err)
	}
}

func TestStaleCounterIsDetectedAndReseeded(t *testing.T) {
	f := newFixture(t)
	for i := range 3 {
		if _, err := f.send(1, conversation.Address{Topic: f.group}, fmt.Sprint("c", i), "hi"); err != nil {
			t.Fatal(err)
		}
	}
	// An AOF restore from a second ago: the counter is back at 1 while MySQL has 1..3.
	if err := f.seqs.ForceCounter(tenant, f.group, 1); err != nil {
		t.Fatal(err)
	}
	res, err := f.send(1, conversation.Address{Topic: f.group}, "after-restore", "hi")
	if err != nil || res.Message.Seq != 4 {
		t.Fatalf("seq must never go back: %+v %v", res.Message, err)
	}
}

// TestCounterBehindASeqNeverStoredIsReseeded: a failover rolls the counter back behind a seq
// that was handed out but never stored, and a month later than the one that stored the seqs
// after it is active. The seq handed out again collides with no row, but stored it would sit
// below a seq of an earlier month (seed 000 §2.2, §12 item 15): the write refuses it, the
// send re-seeds the counter from MySQL and the message goes above every stored seq (DESIGN
// §1.10). Simulator seed 6366665703093049814 at commit fc55f69.
func TestCounterBehindASeqNeverStoredIsReseeded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if res, err := f.send(1, conversation.Address{Topic: f.group}, "a", "hi"); err != nil || res.Message.Seq != 1 {
		t.Fatalf("first send: %+v, %v", res.Message, err)
	}
	// Seq 2 is handed out to a send whose write fails: nothing stores it.
	if err := f.seqs.ForceCounter(tenant, f.group, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.manager.Advance(ctx, tenant, 202610); err != nil {
		t.Fatal(err)
	}
	if res, err := f.send(1, conversation.Address{Topic: f.group}, "b", "hi"); err != nil || res.Message.Seq != 3 || res.Message.Month != 202610 {
		t.Fatalf("send after the switch: %+v, %v; want seq 3 in 202610", res.Message, err)
	}
	if _, err := f.manager.Advance(ctx, tenant, 202611); err != nil {
		t.Fatal(err)
	}
	// A failover to a replica that missed seqs 2 and 3.
	if err := f.seqs.ForceCounter(tenant, f.group, 1); err != nil {
		t.Fatal(err)
	}
	res, err := f.send(1, conversation.Address{Topic: f.group}, "c", "hi")
	if err != nil || res.Message.Seq != 4 || res.Message.Month != 202611 {
		t.Fatalf("send after the rollback: %+v, %v; want seq 4 in 202611, above seq 3 of 202610", res.Message, err)
	}
}

func TestPermissions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tests := []struct {
		name string
		from int64
		addr conversation.Address
		code apperr.Code
	}{
		{"member sends", 2, conversation.Address{Topic: f.group}, apperr.OK},
		{"non-member", 3, conversation.Address{Topic: f.group}, apperr.Forbidden},
		{"unknown group", 1, conversation.Address{Topic: "grp_999"}, apperr.Forbidden},
		{"malformed topic", 1, conversation.Address{Topic: "grp_x"}, apperr.InvalidArgument},
		{"p2p without friendship", 1, conversation.Address{ToUser: 3}, apperr.Forbidden},
		{"p2p to self", 1, conversation.Address{ToUser: 1}, apperr.InvalidArgument},
		{"p2p topic of others", 1, conversation.Address{Topic: topic.ForPair(2, 3)}, apperr.Forbidden},
		{"by conversation id", 1, conversation.Address{ConversationID: 5000}, apperr.OK},
		{"unknown conversation id", 1, conversation.Address{ConversationID: 777}, apperr.NotFound},
		{"no address", 1, conversation.Address{}, apperr.InvalidArgument},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.send(tt.from, tt.addr, fmt.Sprint("p", i), "hi")
			if got := apperr.CodeOf(err); got != tt.code {
				t.Fatalf("code %d, want %d (%v)", got, tt.code, err)
			}
		})
	}
	if err := f.dir.AddFriendship(ctx, tenant, 1, 3); err != nil {
		t.Fatal(err)
	}
	a, err := f.send(1, conversation.Address{ToUser: 3}, "pa", "hi")
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.send(3, conversation.Address{ToUser: 1}, "pb", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if a.Message.Topic != b.Message.Topic || a.Message.ConversationID != b.Message.ConversationID || b.Message.Seq != 2 {
		t.Fatalf("both directions must share one conversation: %+v / %+v", a.Message, b.Message)
	}
}

func TestNothingIsWrittenOnRejectedInput(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.Send(context.Background(), send.Request{
		Tenant: tenant, From: 1, Address: conversation.Address{Topic: f.group},
		Draft: message.Draft{ClientMsgID: "bad", Type: "image", Content: json.RawMessage(`{"data":"AAAA"}`)},
	})
	if apperr.CodeOf(err) != apperr.InvalidArgument {
		t.Fatalf("got %v", err)
	}
	if _, ok, _ := f.queue.Take(context.Background(), tenant, 0, 0); ok {
		t.Fatal("a rejected message must not be enqueued")
	}
	max, _ := f.store.MaxSeq(context.Background(), tenant, f.group)
	if max != 0 {
		t.Fatalf("nothing may be stored, max seq %d", max)
	}
}

var _ ports.DeliverQueue = (*flakyQueue)(nil)
var _ = month.Month(0)

// TestSeqsAreInFlightUntilTheSendReturns: a deliver consumer missing a seq asks whether its send
// still runs; it must run from allocation until the job is queued or the send failed.
func TestSeqsAreInFlightUntilTheSendReturns(t *testing.T) {
	tests := []struct {
		name    string
		down    bool // the deliver queue refuses the job
		wantErr bool
	}{
		{"stored and queued", false, false},
		{"failed after COMMIT", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.queue.setDown(tt.down)
			res, err := f.send(1, conversation.Address{Topic: f.group}, "c1", "hi")
			if (err != nil) != tt.wantErr {
				t.Fatalf("Send = %v; want error %v", err, tt.wantErr)
			}
			if f.inflight.Any(tenant, f.group, 1, 1<<40) {
				t.Fatalf("a seq is still in flight after Send returned (%+v)", res)
			}
			if pending, err := f.seqs.Pending(t.Context(), tenant, f.group, 1, 1<<40); err != nil || pending {
				t.Fatalf("a seq is still marked pending after Send returned: %v, %v (%+v)", pending, err, res)
			}
			// While the job is queued the seq is in flight, here and cluster-wide: the queue
			// sees it so.
			f.queue.setDown(false)
			f.queue.onPush = func(job delivery.Job) {
				if !f.inflight.Any(tenant, job.Topic, job.Message.Seq, job.Message.Seq) {
					t.Errorf("seq %d not in flight while its job is queued", job.Message.Seq)
				}
				if pending, err := f.seqs.Pending(t.Context(), tenant, job.Topic, job.Message.Seq, job.Message.Seq); err != nil || !pending {
					t.Errorf("seq %d not marked pending while its job is queued: %v, %v", job.Message.Seq, pending, err)
				}
			}
			if _, err := f.send(1, conversation.Address{Topic: f.group}, "c2", "again"); err != nil {
				t.Fatal(err)
			}
			if pending, err := f.seqs.Pending(t.Context(), tenant, f.group, 1, 1<<40); err != nil || pending {
				t.Fatalf("a seq is still marked pending after its job was queued: %v, %v", pending, err)
			}
		})
	}
}

// jobs drains the deliver queue and returns the seqs of its jobs.
func (f *fixture) jobs(t *testing.T) []int64 {
	t.Helper()
	var seqs []int64
	for _, job := range f.takeAll(t) {
		seqs = append(seqs, job.Message.Seq)
	}
	return seqs
}

// takeAll takes every queued job.
func (f *fixture) takeAll(t *testing.T) []delivery.Job {
	t.Helper()
	var jobs []delivery.Job
	for {
		job, ok, err := f.queue.Take(context.Background(), tenant, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return jobs
		}
		jobs = append(jobs, job)
	}
}

// TestResendQueuesTheMessageOnce: a message is queued for delivery once, by the send that
// stored it, or by the first resend when that send failed after COMMIT; a resend after that
// queues nothing, whatever Redis still remembers (issue 19: deliver-once rests on MySQL).
func TestResendQueuesTheMessageOnce(t *testing.T) {
	to := func(f *fixture) conversation.Address { return conversation.Address{Topic: f.group} }
	t.Run("acked", func(t *testing.T) {
		f := newFixture(t)
		first, err := f.send(1, to(f), "m", "hi")
		if err != nil {
			t.Fatal(err)
		}
		if got := f.jobs(t); !slices.Equal(got, []int64{1}) {
			t.Fatalf("jobs after the send: %v", got)
		}
		for _, step := range []string{"resend", "resend after Redis lost the idempotency record"} {
			if step != "resend" {
				f.seqs.Forget(tenant)
			}
			again, err := f.send(1, to(f), "m", "hi")
			if err != nil || again.Message.Seq != first.Message.Seq || again.Message.MsgID != first.Message.MsgID {
				t.Fatalf("%s: %+v, %v", step, again.Message, err)
			}
			if got := f.jobs(t); len(got) != 0 {
				t.Fatalf("%s queued %v again", step, got)
			}
		}
	})
	t.Run("failed after commit", func(t *testing.T) {
		f := newFixture(t)
		f.queue.setDown(true)
		if _, err := f.send(1, to(f), "m", "hi"); apperr.CodeOf(err) != apperr.Busy {
			t.Fatalf("send with the queue down: %v", err)
		}
		f.queue.setDown(false)
		for i, want := range [][]int64{{1}, nil} {
			res, err := f.send(1, to(f), "m", "hi")
			if err != nil || res.Message.Seq != 1 {
				t.Fatalf("resend %d: %+v, %v", i, res.Message, err)
			}
			if got := f.jobs(t); !slices.Equal(got, want) {
				t.Fatalf("resend %d queued %v, want %v", i, got, want)
			}
		}
	})
}

// TestStaleActiveMonthIsRepairedOnCollision: a Redis that came back behind an early month
// switch heals on the first colliding send (issue 19).
func TestStaleActiveMonthIsRepairedOnCollision(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.send(1, conversation.Address{Topic: f.group}, "a", "hi"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.manager.Advance(ctx, tenant, 202610); err != nil {
		t.Fatal(err)
	}
	if res, err := f.send(1, conversation.Address{Topic: f.group}, "b", "hi"); err != nil || res.Message.Month != 202610 {
		t.Fatalf("after the switch: %+v, %v", res.Message, err)
	}
	f.months.ForceActive(tenant, 202609) // a failover to a replica that missed the switch
	res, err := f.send(1, conversation.Address{Topic: f.group}, "c", "hi")
	if err != nil || res.Message.Month != 202610 || res.Message.Seq <= 2 {
		t.Fatalf("after the stale failover: %+v, %v", res.Message, err)
	}
	if active, _, _ := f.months.Active(ctx, tenant); active != 202610 {
		t.Fatalf("active month %s, want 202610", active)
	}
}

// TestStaleActiveMonthIsRaisedToTheFloor: after a failover to a replica that missed an early
// switch, a send in a topic that never wrote in the later month (so nothing collides) still
// allocates in it: the process knows the catalog's newest writable month (issue 19).
func TestStaleActiveMonthIsRaisedToTheFloor(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.manager.Advance(ctx, tenant, 202610); err != nil {
		t.Fatal(err)
	}
	f.months.ForceActive(tenant, 202609)
	res, err := f.send(1, conversation.Address{Topic: f.group}, "a", "hi")
	if err != nil || res.Message.Month != 202610 || res.Message.Seq != 1 {
		t.Fatalf("first send after the stale failover: %+v, %v", res.Message, err)
	}
	if active, _, _ := f.months.Active(ctx, tenant); active != 202610 {
		t.Fatalf("active month %s, want 202610", active)
	}
}

type failingMarks struct{ err error }

func (m failingMarks) MarkQueued(context.Context, string, string, int64, string) error { return m.err }

// TestFailedQueuedMarkWithholdsTheAck: a message queued whose durable record could not say so
// is not ACKed, so the client resends at once, while the deliver worker's done marker still
// drops the second job, instead of a late resend queueing it again after the marker expired.
func TestFailedQueuedMarkWithholdsTheAck(t *testing.T) {
	f := newFixture(t)
	svc := f.svc
	f.svc = send.New(send.Config{MsgIDWindow: 5 * time.Minute}, send.Deps{
		Seq: f.seqs, Store: f.store, Queued: failingMarks{errors.New("mysql down")}, FollowUp: f.followUp(memory.NewRouteCache(), nil),
		IDs: memory.NewIDs(f.clock), Clock: f.clock, Metrics: f.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Resolver: conversation.NewResolver(f.dir, memory.NewIDs(f.clock), membership.New(f.dir, f.clock, time.Second)),
		Months:   f.manager,
	})
	if _, err := f.send(1, conversation.Address{Topic: f.group}, "m", "hi"); apperr.CodeOf(err) != apperr.Busy {
		t.Fatalf("send whose queued mark failed: %v, want 50301", err)
	}
	f.svc = svc
	res, err := f.send(1, conversation.Address{Topic: f.group}, "m", "hi")
	if err != nil || res.Message.Seq != 1 {
		t.Fatalf("resend: %+v, %v", res.Message, err)
	}
	// The resend's job says it may follow one already queued, so the deliver worker pushes it
	// only if the first was never pushed (delivery.Job.Resent).
	jobs := f.takeAll(t)
	if len(jobs) != 2 || jobs[0].Message.Seq != 1 || jobs[1].Message.Seq != 1 || jobs[0].Resent || !jobs[1].Resent {
		t.Fatalf("jobs %+v, want the first and the resend's, marked resent (the done marker drops the second)", jobs)
	}
}

// TestStaleActiveMonthIsRefusedToAProcessThatNeverSawTheSwitch: after a failover to a
// replica that missed an early switch, a process that has seen nothing of the switch (no
// floor: a fresh process) gets the month before from Redis; the write transaction refuses a
// new message there (shard.ErrMonthBehind), the send raises the active month to the
// catalog's newest writable one and allocates again, so the ACK is in the newer month. A
// retry of a message stored before the switch still answers with its seq and month (issue 18).
func TestStaleActiveMonthIsRefusedToAProcessThatNeverSawTheSwitch(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	before, err := f.send(1, conversation.Address{Topic: f.group}, "a", "hi")
	if err != nil || before.Message.Month != 202609 {
		t.Fatalf("before the switch: %+v, %v", before.Message, err)
	}
	if _, err := f.manager.Advance(ctx, tenant, 202610); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Millisecond) // what follows happens after the switch, on Redis TIME too
	// Another process, started after the switch: its shard manager has not run a pass yet.
	fresh := shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{
		Store: f.shards, Months: f.months, Metrics: f.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ids := memory.NewIDs(f.clock)
	f.svc = send.New(send.Config{MsgIDWindow: 5 * time.Minute}, send.Deps{
		Seq: f.seqs, Store: f.store, Queued: f.store, FollowUp: f.followUp(memory.NewRouteCache(), nil), IDs: ids, Clock: f.clock,
		Metrics: f.metrics, Resolver: conversation.NewResolver(f.dir, ids, membership.New(f.dir, f.clock, time.Second)),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Months: fresh,
	})
	f.months.ForceActive(tenant, 202609) // a failover to a replica that missed the switch
	res, err := f.send(1, conversation.Address{Topic: f.group}, "b", "hi")
	if err != nil || res.Message.Month != 202610 {
		t.Fatalf("first send of a process that never saw the switch: %+v, %v; want it in 202610", res.Message, err)
	}
	if active, _, _ := f.months.Active(ctx, tenant); active != 202610 {
		t.Fatalf("active month %s, want 202610", active)
	}
	// Redis loses the idempotency records too: the retry of "a" is a fresh allocation in the
	// stale month, answered from the MySQL dedup record with its first seq and month.
	f.seqs.Forget(tenant)
	f.months.ForceActive(tenant, 202609)
	retry, err := f.send(1, conversation.Address{Topic: f.group}, "a", "hi")
	if err != nil || retry.Message.MsgID != before.Message.MsgID || retry.Message.Seq != before.Message.Seq || retry.Message.Month != 202609 {
		t.Fatalf("retry of a message stored before the switch: %+v, %v; want %+v", retry.Message, err, before.Message)
	}
}
