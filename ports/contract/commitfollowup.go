package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/ports"
)

// FollowUpFixture is a commit follow-up and the ports whose keys it writes, all on the same
// store and bound to one fresh tenant: what the follow-up writes, they read back, and their own
// writes (a follow-up of one part for the hot entry and the acked mark, which have no call of
// their own) are the separate calls the follow-up stands for. Hot has the limits of the
// follow-up's hot part, Queue its partitions.
type FollowUpFixture struct {
	Tenant   string
	FollowUp ports.CommitFollowUp
	Routes   ports.RouteCache
	Hot      ports.HotCache
	Queue    ports.DeliverQueue
	Seq      ports.SeqAllocator
	Pending  ports.PendingSeqs
	Months   ports.MonthState
}

// followUpTopics are the topics a follow-up case writes; with three partitions they spread
// over more than one.
var followUpTopics = []string{"grp_1", "grp_2", "grp_3", "grp_4"}

// followUpBefore is the route every topic has before the follow-up: a month before seqMonth.
var followUpBefore = route.Route{{Month: seqMonth - 1, MinSeq: 1, MaxSeq: 10, Count: 10}}

// CommitFollowUp checks ports.CommitFollowUp (DESIGN §4 step 6): its parts leave the route,
// the hot cache, the deliver queue (also a partitioned one), the acked mark and the pending
// marks as the separate calls would; an absent part writes nothing; an invalid part fails
// alone; a job that cannot be queued leaves the acked mark and the pending marks unwritten.
// fresh must return a new tenant on every call, its queue split into partitions.
func CommitFollowUp(t *testing.T, fresh func(t *testing.T, partitions int) FollowUpFixture) {
	for _, partitions := range []int{1, 3} {
		t.Run(fmt.Sprintf("parts read back as after the separate calls with %d partitions", partitions), func(t *testing.T) {
			t.Parallel()
			combined, separate := fresh(t, partitions), fresh(t, partitions)
			for _, topic := range followUpTopics {
				followUpApply(t, combined, followUpOf(t, combined, topic))
				followUpSeparately(t, separate, followUpOf(t, separate, topic))
			}
			want := followUpRead(t, separate)
			followUpSame(t, followUpRead(t, combined), want)
			for _, topic := range followUpTopics {
				if !want.acked[topic] || want.pending[topic] || want.hot[topic] == nil || len(want.routes[topic]) != 2 {
					t.Fatalf("%s after the separate calls: acked %v, pending %v, hot %v, route %v; want every part written",
						topic, want.acked[topic], want.pending[topic], want.hot[topic], want.routes[topic])
				}
			}
			for _, j := range want.jobs {
				if p := delivery.PartitionOf(j.job.Topic, partitions); j.partition != p {
					t.Fatalf("job of %s in partition %d; want %d", j.job.Topic, j.partition, p)
				}
			}
		})
	}

	t.Run("an absent part is left untouched", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name string
			drop func(*ports.FollowUp)
		}{
			{"route", func(f *ports.FollowUp) { f.Route = nil }},
			{"hot", func(f *ports.FollowUp) { f.Hot = nil }},
			{"job", func(f *ports.FollowUp) { f.Job = nil }},
			{"acked", func(f *ports.FollowUp) { f.Acked = nil }},
			{"settle", func(f *ports.FollowUp) { f.Settle = nil }},
			{"all", func(f *ports.FollowUp) { *f = ports.FollowUp{} }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				combined, separate := fresh(t, 1), fresh(t, 1)
				f := followUpOf(t, combined, "grp_1")
				tc.drop(&f)
				followUpApply(t, combined, f)
				f = followUpOf(t, separate, "grp_1")
				tc.drop(&f)
				followUpSeparately(t, separate, f)
				followUpSame(t, followUpRead(t, combined), followUpRead(t, separate))
			})
		}
	})

	t.Run("an invalid part fails alone", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name    string
			spoil   func(*ports.FollowUp)
			failed  func(ports.FollowUpResult) error
			written func(w followUpState) bool
		}{
			{"route", func(f *ports.FollowUp) { f.Route.Segment.MaxSeq = 0 },
				func(r ports.FollowUpResult) error { return r.Route },
				func(w followUpState) bool { return len(w.routes["grp_1"]) == 1 }},
			{"hot", func(f *ports.FollowUp) { f.Hot.Seq = 0 },
				func(r ports.FollowUpResult) error { return r.Hot },
				func(w followUpState) bool { return w.hot["grp_1"] == nil }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				fx := fresh(t, 1)
				f := followUpOf(t, fx, "grp_1")
				hot := *f.Hot // the job keeps the message unspoiled
				f.Hot = &hot
				tc.spoil(&f)
				r := fx.FollowUp.Apply(t.Context(), fx.Tenant, f)
				if tc.failed(r) == nil {
					t.Fatalf("Apply with an invalid %s = %+v; want it failed", tc.name, r)
				}
				if err := errors.Join(otherParts(r, tc.name)...); err != nil {
					t.Fatalf("Apply with an invalid %s: the other parts failed: %v", tc.name, err)
				}
				got := followUpRead(t, fx)
				if !tc.written(got) || !got.acked["grp_1"] || got.pending["grp_1"] || len(got.jobs) != 1 {
					t.Fatalf("after an invalid %s: %+v; want it unwritten and every other part written", tc.name, got)
				}
			})
		}
	})

	t.Run("a job that cannot be queued leaves the acked mark and the pending marks", func(t *testing.T) {
		t.Parallel()
		fx := fresh(t, 1)
		f := followUpOf(t, fx, "grp_1")
		unencodable := *f.Job.Message
		unencodable.Content = json.RawMessage(`{"text":`)
		f.Job.Message = &unencodable
		r := fx.FollowUp.Apply(t.Context(), fx.Tenant, f)
		if r.Job == nil || !errors.Is(r.Acked, ports.ErrNotAttempted) || !errors.Is(r.Settle, ports.ErrNotAttempted) ||
			r.Route != nil || r.Hot != nil {
			t.Fatalf("Apply with an unencodable job = %+v; want the job failed, acked and settle not attempted, the rest written", r)
		}
		got := followUpRead(t, fx)
		if len(got.jobs) != 0 || got.acked["grp_1"] || !got.pending["grp_1"] || len(got.routes["grp_1"]) != 2 || got.hot["grp_1"] == nil {
			t.Fatalf("after a job that cannot be queued: %+v; want no job, no acked mark, the seq pending, route and hot written", got)
		}
	})
}

// followUpOf allocates the next seq of topic as a marked send attempt (after the route
// followUpBefore, seeded first) and returns the follow-up of its message with every part.
func followUpOf(t *testing.T, fx FollowUpFixture, topic string) ports.FollowUp {
	t.Helper()
	sf := SeqFixture{Tenant: fx.Tenant, Seq: fx.Seq, Months: fx.Months}
	if active, ok, err := fx.Months.Active(t.Context(), fx.Tenant); err != nil || !ok || active != seqMonth {
		activate(t, sf, seqMonth)
	}
	if err := fx.Seq.Reseed(t.Context(), fx.Tenant, topic, followUpBefore[0].MaxSeq); err != nil {
		t.Fatalf("Reseed(%s): %v", topic, err)
	}
	if err := fx.Routes.Replace(t.Context(), fx.Tenant, topic, followUpBefore); err != nil {
		t.Fatalf("Replace(%s): %v", topic, err)
	}
	req := followUpRequest(topic)
	req.Attempt, req.PendingFor = "attempt", time.Minute
	a := seqAllocate(t, sf, req)
	m := newMessage(topic, a.Seq, a.MsgID, a.Month)
	m.From, m.ClientMsgID = req.From, req.ClientMsgID
	return ports.FollowUp{
		Route: &ports.RouteUpdate{Topic: topic, Segment: route.Segment{
			Month: m.Month, MinSeq: m.Seq, MaxSeq: m.Seq, Count: 1, MinCreatedAt: m.CreatedAt, MaxCreatedAt: m.CreatedAt,
		}},
		Hot: &m,
		Job: &delivery.Job{
			Tenant: fx.Tenant, Kind: delivery.KindMessage, MsgID: m.MsgID, Topic: topic, From: m.From, ExcludeDevice: 1, Message: &m,
		},
		Acked:  &ports.AckedMark{Topic: topic, From: m.From, ClientMsgID: m.ClientMsgID},
		Settle: &ports.PendingSettle{Topic: topic, Attempt: req.Attempt, Seqs: []int64{a.Seq}},
	}
}

// followUpRequest is the one send of topic a follow-up case makes.
func followUpRequest(topic string) seq.Request {
	return seq.Request{Topic: topic, From: 7, ClientMsgID: "c-" + topic, MsgID: 2_000_000, Hash: "h", MonthOverride: seqMonth}
}

func followUpApply(t *testing.T, fx FollowUpFixture, f ports.FollowUp) {
	t.Helper()
	r := fx.FollowUp.Apply(t.Context(), fx.Tenant, f)
	if err := errors.Join(r.Route, r.Hot, r.Job, r.Acked, r.Settle); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// followUpSeparately makes the calls f stands for, one by one.
func followUpSeparately(t *testing.T, fx FollowUpFixture, f ports.FollowUp) {
	t.Helper()
	ctx := t.Context()
	var errs []error
	if f.Route != nil {
		errs = append(errs, fx.Routes.Apply(ctx, fx.Tenant, []ports.RouteUpdate{*f.Route}))
	}
	// The hot entry and the acked mark have no call of their own: each is a follow-up alone.
	if f.Hot != nil {
		errs = append(errs, fx.FollowUp.Apply(ctx, fx.Tenant, ports.FollowUp{Hot: f.Hot}).Hot)
	}
	if f.Job != nil {
		errs = append(errs, fx.Queue.Push(ctx, *f.Job))
	}
	if f.Acked != nil {
		errs = append(errs, fx.FollowUp.Apply(ctx, fx.Tenant, ports.FollowUp{Acked: f.Acked}).Acked)
	}
	if s := f.Settle; s != nil {
		for _, n := range s.Seqs {
			errs = append(errs, fx.Pending.Settle(ctx, fx.Tenant, s.Topic, n, s.Attempt))
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("separate calls: %v", err)
	}
}

// otherParts are the outcomes of r but the named part's.
func otherParts(r ports.FollowUpResult, name string) []error {
	parts := map[string]error{"route": r.Route, "hot": r.Hot, "job": r.Job, "acked": r.Acked, "settle": r.Settle}
	delete(parts, name)
	out := make([]error, 0, len(parts))
	for _, err := range parts {
		out = append(out, err)
	}
	return out
}

// followUpState is what the follow-up's parts wrote, read back through the fixture's ports.
type followUpState struct {
	routes  map[string]route.Route // nil: no route
	hot     map[string][]message.Message
	jobs    []takenJob
	acked   map[string]bool
	pending map[string]bool
}

// followUpRead reads the state of followUpTopics; it takes the queued jobs.
func followUpRead(t *testing.T, fx FollowUpFixture) followUpState {
	t.Helper()
	ctx := t.Context()
	s := followUpState{routes: map[string]route.Route{}, hot: map[string][]message.Message{}, acked: map[string]bool{}, pending: map[string]bool{}}
	for _, topic := range followUpTopics {
		r, found, err := fx.Routes.Segments(ctx, fx.Tenant, topic)
		if err != nil {
			t.Fatalf("Segments(%s): %v", topic, err)
		}
		if found {
			s.routes[topic] = r
		}
		if s.hot[topic], err = fx.Hot.After(ctx, fx.Tenant, topic, 0, 100); err != nil {
			t.Fatalf("hot After(%s): %v", topic, err)
		}
		if len(s.hot[topic]) == 0 {
			s.hot[topic] = nil
		}
		req := followUpRequest(topic)
		if s.pending[topic], err = fx.Pending.Pending(ctx, fx.Tenant, topic, 1, 1<<40); err != nil {
			t.Fatalf("Pending(%s): %v", topic, err)
		}
		a, err := fx.Seq.Allocate(ctx, fx.Tenant, req)
		switch {
		case errors.Is(err, seq.ErrCounterMissing): // the topic was never prepared: no record
		case err != nil:
			t.Fatalf("Allocate(%s) again: %v", topic, err)
		default:
			s.acked[topic] = a.Existing && a.Acked
		}
	}
	s.jobs = deliverDrain(t, fx.Queue, fx.Tenant)
	for i, j := range s.jobs {
		if j.job.Tenant != fx.Tenant {
			t.Fatalf("job of tenant %q queued for %q", j.job.Tenant, fx.Tenant)
		}
		s.jobs[i].job.Tenant = "" // fixtures compared have tenants of their own
	}
	return s
}

// followUpSame compares two states as their ports read them back.
func followUpSame(t *testing.T, got, want followUpState) {
	t.Helper()
	for _, topic := range followUpTopics {
		sameRoute(t, topic, got.routes[topic], want.routes[topic])
		if len(got.hot[topic]) != len(want.hot[topic]) {
			t.Fatalf("hot cache of %s has %d messages; want %d", topic, len(got.hot[topic]), len(want.hot[topic]))
		}
		for i := range want.hot[topic] {
			sameMessage(t, got.hot[topic][i], want.hot[topic][i])
		}
		if got.acked[topic] != want.acked[topic] || got.pending[topic] != want.pending[topic] {
			t.Fatalf("%s acked %v pending %v; want acked %v pending %v",
				topic, got.acked[topic], got.pending[topic], want.acked[topic], want.pending[topic])
		}
	}
	if len(got.jobs) != len(want.jobs) {
		t.Fatalf("%d jobs queued; want %d", len(got.jobs), len(want.jobs))
	}
	for i, w := range want.jobs {
		g := got.jobs[i]
		if g.partition != w.partition {
			t.Fatalf("job %d in partition %d; want %d", i, g.partition, w.partition)
		}
		gm, wm := g.job.Message, w.job.Message
		g.job.Message, w.job.Message = nil, nil
		deliverSame(t, g.job, w.job)
		if (gm == nil) != (wm == nil) {
			t.Fatalf("job %d message %v; want %v", i, gm, wm)
		}
		if wm != nil {
			sameMessage(t, *gm, *wm)
		}
	}
}

func sameRoute(t *testing.T, topic string, got, want route.Route) {
	t.Helper()
	if (got == nil) != (want == nil) || len(got) != len(want) {
		t.Fatalf("route of %s = %+v; want %+v", topic, got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Month != w.Month || g.MinSeq != w.MinSeq || g.MaxSeq != w.MaxSeq || g.Count != w.Count ||
			!g.MinCreatedAt.Equal(w.MinCreatedAt) || !g.MaxCreatedAt.Equal(w.MaxCreatedAt) {
			t.Fatalf("route of %s [%d] = %+v; want %+v", topic, i, g, w)
		}
	}
}
