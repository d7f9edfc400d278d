package contract

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/ports"
)

// SeqFixture is a seq allocator and the month state it reads, bound to one fresh tenant.
type SeqFixture struct {
	Tenant string
	Seq    ports.SeqAllocator
	Months ports.MonthState
	// Pending is the allocator's view of its marks, for PendingSeqs.
	Pending ports.PendingSeqs
	// FollowUp writes the acked mark of the allocator's records (ports.FollowUp.Acked).
	FollowUp ports.CommitFollowUp
}

// seqMonth is the month most cases allocate in, via MonthOverride, so they never depend on
// the clock.
const seqMonth = month.Month(203106)

// SeqAllocator checks ports.SeqAllocator (DESIGN §4 step 4, §1 "Seq after Redis loss").
// fresh must return a new tenant on every call, with FollowUp set.
func SeqAllocator(t *testing.T, fresh func(t *testing.T) SeqFixture) {
	// ready returns a fixture whose topic counter exists and whose seqMonth is ready and active.
	ready := func(t *testing.T, topics ...string) SeqFixture {
		f := fresh(t)
		activate(t, f, seqMonth)
		for _, tp := range topics {
			if err := f.Seq.Reseed(t.Context(), f.Tenant, tp, 0); err != nil {
				t.Fatalf("Reseed(%s, 0): %v", tp, err)
			}
		}
		return f
	}

	t.Run("seqs run 1..N per topic", func(t *testing.T) {
		t.Parallel()
		f := ready(t, "grp_1", "grp_2")
		for i := 1; i <= 20; i++ {
			for _, tp := range []string{"grp_1", "grp_2"} {
				req := seqReq(tp, i)
				a := seqAllocate(t, f, req)
				want := seq.Allocation{Seq: int64(i), Month: seqMonth, MsgID: req.MsgID, Hash: req.Hash}
				if a != want {
					t.Fatalf("%s #%d = %+v; want %+v", tp, i, a, want)
				}
			}
		}
	})

	t.Run("a retry returns the first allocation", func(t *testing.T) {
		t.Parallel()
		f := ready(t, "grp_1")
		first := seqAllocate(t, f, seqReq("grp_1", 1))
		seqAllocate(t, f, seqReq("grp_1", 2))
		retry := seqReq("grp_1", 1)
		retry.MsgID, retry.Hash = 999, "other payload"
		want := first
		want.Existing = true
		if got := seqAllocate(t, f, retry); got != want {
			t.Fatalf("retry = %+v; want %+v", got, want)
		}
		seqMarkAcked(t, f, retry)
		want.Acked = true
		if got := seqAllocate(t, f, retry); got != want {
			t.Fatalf("retry after ack = %+v; want %+v", got, want)
		}
	})

	t.Run("the same client id of another sender is another message", func(t *testing.T) {
		t.Parallel()
		f := ready(t, "grp_1")
		a := seqAllocate(t, f, seqReq("grp_1", 1))
		other := seqReq("grp_1", 1)
		other.From++
		if b := seqAllocate(t, f, other); b.Existing || b.Seq != a.Seq+1 {
			t.Fatalf("other sender = %+v; want a new seq %d", b, a.Seq+1)
		}
	})

	t.Run("mark acked never creates a record", func(t *testing.T) {
		t.Parallel()
		f := ready(t, "grp_1")
		req := seqReq("grp_1", 1)
		seqMarkAcked(t, f, req)
		if a := seqAllocate(t, f, req); a.Existing || a.Acked || a.Seq != 1 {
			t.Fatalf("after an acked mark of nothing: %+v; want a fresh seq 1", a)
		}
	})

	t.Run("reallocate gives a fresh seq and keeps msg id and hash", func(t *testing.T) {
		t.Parallel()
		f := ready(t, "grp_1")
		first := seqAllocate(t, f, seqReq("grp_1", 1))
		again := seqReq("grp_1", 1)
		again.MsgID, again.Reallocate = 555, true
		re := seqAllocate(t, f, again)
		want := seq.Allocation{Seq: first.Seq + 1, Month: seqMonth, MsgID: first.MsgID, Hash: first.Hash}
		if re != want {
			t.Fatalf("reallocated = %+v; want %+v", re, want)
		}
		want.Existing = true
		if got := seqAllocate(t, f, seqReq("grp_1", 1)); got != want {
			t.Fatalf("retry after reallocation = %+v; want %+v", got, want)
		}
	})

	t.Run("missing counter, then reseed continues above the floor and never lowers", func(t *testing.T) {
		t.Parallel()
		f := ready(t)
		if _, err := f.Seq.Allocate(t.Context(), f.Tenant, seqReq("grp_1", 1)); !errors.Is(err, seq.ErrCounterMissing) {
			t.Fatalf("Allocate without counter: %v; want ErrCounterMissing", err)
		}
		steps := []struct {
			floor int64
			want  int64
		}{{100, 101}, {50, 102}, {102, 103}, {200, 201}}
		for i, st := range steps {
			if err := f.Seq.Reseed(t.Context(), f.Tenant, "grp_1", st.floor); err != nil {
				t.Fatalf("Reseed(%d): %v", st.floor, err)
			}
			if a := seqAllocate(t, f, seqReq("grp_1", i+1)); a.Seq != st.want {
				t.Fatalf("after Reseed(%d): seq %d; want %d", st.floor, a.Seq, st.want)
			}
		}
		if err := f.Seq.Reseed(t.Context(), f.Tenant, "grp_1", -1); err == nil {
			t.Fatal("Reseed(-1) succeeded")
		}
	})

	t.Run("no active month fails without consuming a seq", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		if err := f.Seq.Reseed(t.Context(), f.Tenant, "grp_1", 0); err != nil {
			t.Fatalf("Reseed: %v", err)
		}
		req := seqReq("grp_1", 1)
		req.MonthOverride = seqMonth
		if _, err := f.Seq.Allocate(t.Context(), f.Tenant, req); !errors.Is(err, seq.ErrNoActiveMonth) {
			t.Fatalf("Allocate without ready month: %v; want ErrNoActiveMonth", err)
		}
		if err := markReady(t.Context(), f.Months, f.Tenant, seqMonth.Next()); err != nil {
			t.Fatalf("MarkReady: %v", err)
		}
		if _, err := f.Seq.Allocate(t.Context(), f.Tenant, req); !errors.Is(err, seq.ErrNoActiveMonth) {
			t.Fatalf("Allocate with only another month ready: %v; want ErrNoActiveMonth", err)
		}
		// A ready month is not enough while none is active: after losing its active month Redis
		// cannot know it was not ahead of the clock, so only the month state (seeded from the
		// catalog by the shard manager) sets it again, never the allocation itself.
		if err := markReady(t.Context(), f.Months, f.Tenant, seqMonth); err != nil {
			t.Fatalf("MarkReady: %v", err)
		}
		if _, err := f.Seq.Allocate(t.Context(), f.Tenant, req); !errors.Is(err, seq.ErrNoActiveMonth) {
			t.Fatalf("Allocate with a ready month but none active: %v; want ErrNoActiveMonth", err)
		}
		activate(t, f, seqMonth)
		if a := seqAllocate(t, f, req); a.Existing || a.Seq != 1 || a.Month != seqMonth {
			t.Fatalf("after Advance = %+v; want seq 1 in %s, not existing", a, seqMonth)
		}
	})

	t.Run("a topic allocates in its own group's active month", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		a, b, ta, tb := twoTopics(t, f.Months)
		f = ready(t, ta, tb)
		jun, jul := seqMonth, seqMonth.Next()
		// Group b switched to jul; group a has not yet (a switch halfway across the groups).
		if err := f.Months.MarkReady(t.Context(), f.Tenant, b, jul); err != nil {
			t.Fatalf("MarkReady: %v", err)
		}
		if got, err := f.Months.Advance(t.Context(), f.Tenant, b, jul); err != nil || got != jul {
			t.Fatalf("Advance(group %d) = %v, %v; want %s", b, got, err, jul)
		}
		for i, st := range []struct {
			topic string
			want  month.Month
		}{{ta, jun}, {tb, jul}, {ta, jun}} {
			req := seqReq(st.topic, i+1)
			req.MonthOverride = jul // the clock is in jul, but a's ready set lacks it
			if got := seqAllocate(t, f, req); got.Month != st.want {
				t.Fatalf("%s (group %d or %d): %+v; want %s", st.topic, a, b, got, st.want)
			}
		}
	})

	t.Run("active month moves forward into ready months only", func(t *testing.T) {
		t.Parallel()
		f := ready(t, "grp_1")
		jun, jul, aug := seqMonth, seqMonth.Next(), seqMonth.Add(2)
		steps := []struct {
			name     string
			ready    month.Month // marked ready before the step; 0 for none
			override month.Month
			want     month.Month
		}{
			{name: "current ready", override: jun, want: jun},
			{name: "next month not ready stays", override: jul, want: jun},
			{name: "next month ready", ready: jul, override: jul, want: jul},
			{name: "older clock never goes back", override: jun, want: jul},
			{name: "jumps to a ready month", ready: aug, override: aug, want: aug},
		}
		for i, st := range steps {
			if st.ready != 0 {
				if err := markReady(t.Context(), f.Months, f.Tenant, st.ready); err != nil {
					t.Fatalf("%s: MarkReady: %v", st.name, err)
				}
			}
			req := seqReq("grp_1", i+1)
			req.MonthOverride = st.override
			if a := seqAllocate(t, f, req); a.Month != st.want || a.Seq != int64(i+1) {
				t.Fatalf("%s: %+v; want seq %d in %s", st.name, a, i+1, st.want)
			}
			if active, _, err := f.Months.Active(t.Context(), f.Tenant); err != nil || active != st.want {
				t.Fatalf("%s: Active = %v, %v; want %s", st.name, active, err, st.want)
			}
		}
	})

	t.Run("a floor raises a stale active month and never lowers it", func(t *testing.T) {
		t.Parallel()
		f := ready(t, "grp_1")
		jun, jul := seqMonth, seqMonth.Next()
		steps := []struct {
			name        string
			floor, want month.Month
		}{
			{name: "no floor", want: jun},
			{name: "floor ahead, not in the ready set yet", floor: jul, want: jul},
			{name: "floor behind", floor: jun, want: jul},
		}
		for i, st := range steps {
			req := seqReq("grp_1", i+1)
			req.MonthOverride, req.Floor = jun, st.floor
			if a := seqAllocate(t, f, req); a.Month != st.want || a.Seq != int64(i+1) {
				t.Fatalf("%s: %+v; want seq %d in %s", st.name, a, i+1, st.want)
			}
			if active, _, err := f.Months.Active(t.Context(), f.Tenant); err != nil || active != st.want {
				t.Fatalf("%s: Active = %v, %v; want %s", st.name, active, err, st.want)
			}
		}
		lost := fresh(t)
		if err := lost.Seq.Reseed(t.Context(), lost.Tenant, "grp_1", 0); err != nil {
			t.Fatalf("Reseed: %v", err)
		}
		req := seqReq("grp_1", 1)
		req.Floor = jul
		if _, err := lost.Seq.Allocate(t.Context(), lost.Tenant, req); !errors.Is(err, seq.ErrNoActiveMonth) {
			t.Fatalf("a floor with no active month: %v; want ErrNoActiveMonth (the catalog re-seeds it)", err)
		}
	})

	t.Run("an allocation makes a scheduled switch once its instant is reached, in the same step", func(t *testing.T) {
		t.Parallel()
		f := ready(t, "grp_1")
		jun, jul := seqMonth, seqMonth.Next()
		if err := markReady(t.Context(), f.Months, f.Tenant, jul); err != nil {
			t.Fatalf("MarkReady: %v", err)
		}
		now, err := f.Months.Now(t.Context())
		if err != nil {
			t.Fatalf("Now: %v", err)
		}
		at := now.Add(2 * time.Second) // ahead still after the next two calls on a busy box
		if _, err := f.Months.SwitchAt(t.Context(), f.Tenant, f.Months.GroupOf("grp_1"), jul, at); err != nil {
			t.Fatalf("SwitchAt: %v", err)
		}
		req := seqReq("grp_1", 1)
		req.MonthOverride = jun
		if a, err := f.Seq.Allocate(t.Context(), f.Tenant, req); err != nil || a.Month != jun || !a.At.Before(at) {
			t.Fatalf("before the instant: %+v, %v; want %s allocated before %s", a, err, jun, at)
		}
		for n := now; n.Before(at); {
			time.Sleep(at.Sub(n))
			if n, err = f.Months.Now(t.Context()); err != nil {
				t.Fatalf("Now: %v", err)
			}
		}
		req = seqReq("grp_1", 2)
		req.MonthOverride = jun
		if a, err := f.Seq.Allocate(t.Context(), f.Tenant, req); err != nil || a.Month != jul || a.At.Before(at.Truncate(time.Millisecond)) {
			t.Fatalf("once due: %+v, %v; want %s allocated at or after %s", a, err, jul, at)
		}
	})

	t.Run("without override the month comes from the month state clock", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		before, err := f.Months.Now(t.Context())
		if err != nil {
			t.Fatalf("Now: %v", err)
		}
		cur := month.Of(before)
		activate(t, f, cur)
		if err := markReady(t.Context(), f.Months, f.Tenant, cur.Next()); err != nil {
			t.Fatalf("MarkReady: %v", err)
		}
		if err := f.Seq.Reseed(t.Context(), f.Tenant, "grp_1", 0); err != nil {
			t.Fatalf("Reseed: %v", err)
		}
		req := seqReq("grp_1", 1)
		req.MonthOverride = 0
		a := seqAllocate(t, f, req)
		after, err := f.Months.Now(t.Context())
		if err != nil {
			t.Fatalf("Now: %v", err)
		}
		if a.Month != cur && a.Month != month.Of(after) {
			t.Fatalf("month %s; want the clock's month %s", a.Month, cur)
		}
	})

	t.Run("int64 values survive exactly", func(t *testing.T) {
		t.Parallel()
		f := ready(t)
		const floor = int64(1)<<62 + 1 // far past 2^53, where a double would round
		if err := f.Seq.Reseed(t.Context(), f.Tenant, "grp_1", floor); err != nil {
			t.Fatalf("Reseed: %v", err)
		}
		req := seqReq("grp_1", 1)
		req.MsgID = math.MaxInt64 - 2
		if a := seqAllocate(t, f, req); a.Seq != floor+1 || a.MsgID != req.MsgID {
			t.Fatalf("= %+v; want seq %d msg_id %d", a, floor+1, req.MsgID)
		}
		if err := f.Seq.Reseed(t.Context(), f.Tenant, "grp_1", floor); err != nil {
			t.Fatalf("Reseed below counter: %v", err)
		}
		if a := seqAllocate(t, f, seqReq("grp_1", 2)); a.Seq != floor+2 {
			t.Fatalf("after lower reseed: seq %d; want %d", a.Seq, floor+2)
		}
	})

	t.Run("bad requests are rejected", func(t *testing.T) {
		t.Parallel()
		f := ready(t, "grp_1")
		cases := map[string]func(*seq.Request){
			"bad topic":     func(r *seq.Request) { r.Topic = "grp_1:x" },
			"no client id":  func(r *seq.Request) { r.ClientMsgID = "" },
			"no msg id":     func(r *seq.Request) { r.MsgID = 0 },
			"invalid month": func(r *seq.Request) { r.MonthOverride = 203113 },
		}
		for name, mutate := range cases {
			req := seqReq("grp_1", 1)
			mutate(&req)
			if _, err := f.Seq.Allocate(t.Context(), f.Tenant, req); err == nil {
				t.Errorf("%s: Allocate succeeded", name)
			}
		}
		if _, err := f.Seq.Allocate(t.Context(), "Bad{tenant}", seqReq("grp_1", 1)); err == nil {
			t.Error("bad tenant: Allocate succeeded")
		}
	})

	t.Run("concurrent allocations are unique and continuous", func(t *testing.T) {
		t.Parallel()
		const workers, each = 50, 100
		f := ready(t, "grp_1")
		seqs := make([][]int64, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					req := seqReq("grp_1", w*each+i+1)
					a, err := f.Seq.Allocate(t.Context(), f.Tenant, req)
					if err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
					seqs[w] = append(seqs[w], a.Seq)
				}
			})
		}
		wg.Wait()
		all := slices.Concat(seqs...)
		slices.Sort(all)
		if len(all) != workers*each {
			t.Fatalf("%d allocations; want %d", len(all), workers*each)
		}
		for i, s := range all {
			if s != int64(i+1) {
				t.Fatalf("sorted seqs[%d] = %d; want %d (duplicate or gap)", i, s, i+1)
			}
		}
	})
}

// seqReq is the n-th distinct request of one sender to topic, in seqMonth.
func seqReq(topic string, n int) seq.Request {
	return seq.Request{
		Topic: topic, From: 7, ClientMsgID: fmt.Sprintf("c-%d", n),
		MsgID: int64(1_000_000 + n), Hash: fmt.Sprintf("h-%d", n), MonthOverride: seqMonth,
	}
}

func seqAllocate(t *testing.T, f SeqFixture, req seq.Request) seq.Allocation {
	t.Helper()
	before := time.Now()
	a, err := f.Seq.Allocate(t.Context(), f.Tenant, req)
	if err != nil {
		t.Fatalf("Allocate(%s, %s): %v", req.Topic, req.ClientMsgID, err)
	}
	// A fresh allocation carries its instant on the allocator's clock (here the machine's,
	// give or take the millisecond it is cut to); a retry's record carries none.
	switch {
	case a.Existing && !a.At.IsZero():
		t.Fatalf("Allocate(%s, %s) of a known record has instant %s; want none", req.Topic, req.ClientMsgID, a.At)
	case !a.Existing && (a.At.Before(before.Add(-time.Second)) || a.At.After(time.Now().Add(time.Second))):
		t.Fatalf("Allocate(%s, %s) fresh at %s; want an instant around %s", req.Topic, req.ClientMsgID, a.At, before)
	}
	a.At = time.Time{}
	return a
}

// activate marks m ready and makes it the active month of every group, as the shard manager
// does.
func activate(t *testing.T, f SeqFixture, m month.Month) {
	t.Helper()
	if err := markReady(t.Context(), f.Months, f.Tenant, m); err != nil {
		t.Fatalf("MarkReady(%s): %v", m, err)
	}
	for g := range f.Months.Groups() {
		if got, err := f.Months.Advance(t.Context(), f.Tenant, g, m); err != nil || got != m {
			t.Fatalf("Advance(group %d, %s) = %v, %v", g, m, got, err)
		}
	}
}

// markReady marks m ready in every group.
func markReady(ctx context.Context, ms ports.MonthState, tenant string, m month.Month) error {
	for g := range ms.Groups() {
		if err := ms.MarkReady(ctx, tenant, g, m); err != nil {
			return err
		}
	}
	return nil
}

// seqMarkAcked flags the record of req's send as acked, as a commit follow-up does.
func seqMarkAcked(t *testing.T, f SeqFixture, req seq.Request) {
	t.Helper()
	mark := &ports.AckedMark{Topic: req.Topic, From: req.From, ClientMsgID: req.ClientMsgID}
	if err := f.FollowUp.Apply(t.Context(), f.Tenant, ports.FollowUp{Acked: mark}).Acked; err != nil {
		t.Fatalf("acked mark of %s/%d/%s: %v", req.Topic, req.From, req.ClientMsgID, err)
	}
}
