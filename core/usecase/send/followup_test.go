package send_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

var errRedisDown = errors.New("redis down")

// scriptedFollowUp records every follow-up and fails the named part of each (whole: the call,
// as when Redis is unreachable), writing the others through next as the Redis script does: a
// failed job leaves the acked mark and the settle unattempted.
type scriptedFollowUp struct {
	next  ports.CommitFollowUp
	fail  string // "", "whole", "route", "hot", "job", "acked", "settle"
	calls []ports.FollowUp
}

func (s *scriptedFollowUp) Apply(ctx context.Context, tenant string, f ports.FollowUp) ports.FollowUpResult {
	s.calls = append(s.calls, f)
	if s.fail == "whole" {
		return f.Failed(errRedisDown)
	}
	kept := f
	switch s.fail {
	case "route":
		kept.Route = nil
	case "hot":
		kept.Hot = nil
	case "job":
		kept.Job, kept.Acked, kept.Settle = nil, nil, nil
	case "acked":
		kept.Acked = nil
	case "settle":
		kept.Settle = nil
	}
	r := s.next.Apply(ctx, tenant, kept)
	switch s.fail {
	case "route":
		r.Route = errRedisDown
	case "hot":
		r.Hot = errRedisDown
	case "job":
		r.Job, r.Acked, r.Settle = errRedisDown, ports.ErrNotAttempted, ports.ErrNotAttempted
	case "acked":
		r.Acked = errRedisDown
	case "settle":
		r.Settle = errRedisDown
	}
	return r
}

// followUpFixture is the send fixture whose follow-up after COMMIT is scripted, with a hot
// cache and recorded route repairs.
type followUpFixture struct {
	*fixture
	script  *scriptedFollowUp
	hot     *memory.HotCache
	repairs *recordedRepairs
}

func newFollowUpFixture(t *testing.T) *followUpFixture {
	t.Helper()
	f := &followUpFixture{fixture: newFixture(t), repairs: &recordedRepairs{}}
	f.hot = memory.NewHotCache(f.clock.Now, 24*time.Hour, 100)
	f.script = &scriptedFollowUp{next: f.fixture.followUp(memory.NewRouteCache(), f.hot)}
	ids := memory.NewIDs(f.clock)
	f.svc = send.New(send.Config{MsgIDWindow: 5 * time.Minute, PendingFor: 10 * time.Second}, send.Deps{
		Seq: f.seqs, Store: f.store, FollowUp: f.script, Queued: f.store, IDs: ids, Clock: f.clock,
		Metrics: f.metrics, Resolver: conversation.NewResolver(f.dir, ids, membership.New(f.dir, f.clock, time.Second)),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Months: f.manager, InFlight: f.inflight,
		Pending: f.seqs, Repairs: f.repairs,
	})
	return f
}

// TestFollowUpFailuresKeepTheirConsequences: each part of the follow-up after COMMIT fails with
// the consequence its separate call had: the job decides the ACK, a route update queues a
// repair, a hot write counts a metric, the acked mark and the settle only log; a whole call
// that fails is all of them at once. A send without an ACK still settles its pending marks.
func TestFollowUpFailuresKeepTheirConsequences(t *testing.T) {
	cases := []struct {
		fail        string
		wantAck     bool
		wantRepair  bool
		wantHotFail float64
		wantPending bool // the seq's mark is left to its deadline
		wantJobs    int
	}{
		{fail: "", wantAck: true, wantJobs: 1},
		{fail: "route", wantAck: true, wantRepair: true, wantJobs: 1},
		{fail: "hot", wantAck: true, wantHotFail: 1, wantJobs: 1},
		{fail: "acked", wantAck: true, wantJobs: 1},
		{fail: "settle", wantAck: true, wantPending: true, wantJobs: 1},
		{fail: "job"},
		{fail: "whole", wantRepair: true, wantHotFail: 1},
	}
	for _, tc := range cases {
		t.Run("fail "+tc.fail, func(t *testing.T) {
			f := newFollowUpFixture(t)
			f.script.fail = tc.fail
			_, err := f.send(1, conversation.Address{Topic: f.group}, "c1", "hi")
			if tc.wantAck != (err == nil) || !tc.wantAck && apperr.CodeOf(err) != apperr.Busy {
				t.Fatalf("send = %v; want ACK %v, else 50301", err, tc.wantAck)
			}
			if len(f.script.calls) != 1 {
				t.Fatalf("%d follow-up calls; want one", len(f.script.calls))
			}
			if got := len(f.repairs.topics) > 0; got != tc.wantRepair {
				t.Errorf("route repair queued: %v; want %v", got, tc.wantRepair)
			}
			if n := f.metrics.Count("group_message_hot_cache_write_failed_total"); n != tc.wantHotFail {
				t.Errorf("%v failed hot writes counted; want %v", n, tc.wantHotFail)
			}
			if pending, err := f.seqs.Pending(t.Context(), tenant, f.group, 1, 1); err != nil || pending != tc.wantPending {
				t.Errorf("seq 1 pending: %v, %v; want %v", pending, err, tc.wantPending)
			}
			if got := f.jobs(t); len(got) != tc.wantJobs {
				t.Errorf("jobs %v; want %d", got, tc.wantJobs)
			}
			if f.inflight.Any(tenant, f.group, 1, 1<<40) {
				t.Error("a seq is still in flight after the send returned")
			}
		})
	}
}

// TestFollowUpHoldsWhatEachOutcomeWrites: a new message writes every part; a resend of a
// message already stored and queued writes no route (MySQL's route did not change) and queues
// nothing; a resend whose idempotency record Redis lost is a duplicate: its tombstone's seq goes
// into the route, the hot cache keeps the stored message, and nothing is queued again.
func TestFollowUpHoldsWhatEachOutcomeWrites(t *testing.T) {
	type parts struct{ route, hot, job, acked, settle bool }
	f := newFollowUpFixture(t)
	steps := []struct {
		name      string
		before    func()
		want      parts
		wantRoute int64 // the seq of the route update
	}{
		{"new message", func() {}, parts{true, true, true, true, true}, 1},
		{"resend", func() {}, parts{false, true, false, true, true}, 0},
		{"resend after Redis lost the record", func() { f.seqs.Forget(tenant) }, parts{true, false, false, true, true}, 2},
	}
	for i, st := range steps {
		st.before()
		res, err := f.send(1, conversation.Address{Topic: f.group}, "c1", "hi")
		if err != nil || res.Message.Seq != 1 {
			t.Fatalf("%s: %+v, %v", st.name, res.Message, err)
		}
		u := f.script.calls[i]
		got := parts{u.Route != nil, u.Hot != nil, u.Job != nil, u.Acked != nil, u.Settle != nil}
		if got != st.want {
			t.Fatalf("%s wrote %+v; want %+v", st.name, got, st.want)
		}
		if u.Route != nil && u.Route.Segment.MinSeq != st.wantRoute {
			t.Fatalf("%s: route update %+v; want seq %d", st.name, u.Route, st.wantRoute)
		}
		if u.Hot != nil && u.Hot.Seq != 1 {
			t.Fatalf("%s: hot message seq %d; want the stored message's 1", st.name, u.Hot.Seq)
		}
		if a := u.Acked; a.Topic != f.group || a.From != 1 || a.ClientMsgID != "c1" {
			t.Fatalf("%s: acked mark %+v", st.name, a)
		}
		if s := u.Settle; s.Topic != f.group || s.Attempt == "" || len(s.Seqs) == 0 {
			t.Fatalf("%s: settle %+v; want the attempt's seqs", st.name, s)
		}
	}
}
