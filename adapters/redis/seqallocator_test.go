package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/ports"
)

// TestLuaUTCMonth checks the script's civil-from-days arithmetic against Go's calendar on
// both sides of every month boundary from 1970 to 2199 (leap years and centuries included).
func TestLuaUTCMonth(t *testing.T) {
	c := testClient(t)
	var secs []string
	var want []month.Month
	for m := month.Month(197001); m < 220001; m = m.Next() {
		for _, at := range []time.Time{m.Start(), m.End().Add(-time.Second), m.Start().Add(15 * 24 * time.Hour)} {
			secs = append(secs, strconv.FormatInt(at.Unix(), 10))
			want = append(want, m)
		}
	}
	script := rueidis.NewLuaScript(luaUTCMonth + `
local out = {}
for i, s in ipairs(ARGV) do out[i] = utc_month(tonumber(s)) end
return out
`)
	got, err := script.Exec(t.Context(), c, nil, secs).AsStrSlice()
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	for i := range want {
		if got[i] != want[i].String() {
			t.Fatalf("utc_month(%s) = %s; want %s", secs[i], got[i], want[i])
		}
	}
}

func TestSeqKeysLifetime(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	k, _ := topicKeys(tenant, "grp_1")
	const ttl = time.Hour
	s, ms := NewSeqAllocator(c, ttl), NewMonthState(c)
	m := month.Month(203106)
	activateMonth(t, ms, tenant, m)
	if err := s.Reseed(t.Context(), tenant, "grp_1", 0); err != nil {
		t.Fatal(err)
	}
	req := seq.Request{Topic: "grp_1", From: 3, ClientMsgID: "c", MsgID: 9, Hash: "h", MonthOverride: m}
	if _, err := s.Allocate(t.Context(), tenant, req); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key    string
		lo, hi time.Duration // PTTL bounds; -1 means no TTL
	}{
		{k.Idem("grp_1", 3, "c"), ttl - time.Minute, ttl},
		{k.Seq("grp_1"), -1, -1},
		{k.ActiveMonth(), -1, -1},
		{k.ReadyMonths(), -1, -1},
	}
	for _, cs := range cases {
		got := pttl(t, c, cs.key)
		if got < cs.lo || got > cs.hi {
			t.Errorf("PTTL %s = %v; want in [%v, %v]", cs.key, got, cs.lo, cs.hi)
		}
	}
	mark := ports.FollowUp{Acked: &ports.AckedMark{Topic: "grp_1", From: 3, ClientMsgID: "c"}}
	if err := testFollowUp(c).Apply(t.Context(), tenant, mark).Acked; err != nil {
		t.Fatal(err)
	}
	state, err := c.Do(t.Context(), c.B().Hget().Key(k.Idem("grp_1", 3, "c")).Field("state").Build()).ToString()
	if err != nil || state != "acked" {
		t.Fatalf("state = %q, %v; want acked", state, err)
	}
	if got := pttl(t, c, k.Idem("grp_1", 3, "c")); got < ttl-time.Minute {
		t.Errorf("the acked mark dropped the TTL: PTTL %v", got)
	}
}

func TestMonthStateNowIsRedisTime(t *testing.T) {
	c := testClient(t)
	now, err := NewMonthState(c).Now(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Redis runs on this machine, so both clocks agree closely.
	if d := time.Since(now); d < -5*time.Second || d > 5*time.Second {
		t.Fatalf("Redis TIME %v is %v away from the local clock", now, d)
	}
}

// pttl returns the key's remaining lifetime, -1 for no TTL.
func pttl(t *testing.T, c rueidis.Client, key string) time.Duration {
	t.Helper()
	n, err := c.Do(t.Context(), c.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	if n < 0 {
		return time.Duration(n)
	}
	return time.Duration(n) * time.Millisecond
}

// BenchmarkAllocate measures allocations from many concurrent senders over 64 topics of one
// tenant: one Lua call each, auto-pipelined by rueidis over a few connections, each marking its
// seq pending as the send path does.
func BenchmarkAllocate(b *testing.B) {
	c := testClient(b)
	tenant := testTenant(b, c)
	ctx := context.Background()
	s := allocatorThisMonth(b, c, tenant)
	const topics = 64
	for i := range topics {
		if err := s.Reseed(ctx, tenant, fmt.Sprintf("grp_%d", i+1), 0); err != nil {
			b.Fatal(err)
		}
	}
	// settled: each allocation's mark is settled after it, as a send that queued its job does;
	// else the marks pile up as behind slow sends.
	for _, settled := range []bool{false, true} {
		b.Run(fmt.Sprintf("settled=%v", settled), func(b *testing.B) {
			var workers atomic.Int64
			b.SetParallelism(32) // senders per CPU: the send path runs many at once
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := workers.Add(1)
				for i := 0; pb.Next(); i++ {
					req := seq.Request{
						Topic: fmt.Sprintf("grp_%d", (int(w)+i)%topics+1), From: w,
						ClientMsgID: fmt.Sprintf("%v.%d", settled, i), MsgID: int64(i + 1), Hash: "h",
						Attempt: strconv.Itoa(i), PendingFor: 10 * time.Second, // marked, as every send is
					}
					a, err := s.Allocate(ctx, tenant, req)
					if err != nil {
						b.Error(err)
						return
					}
					if settled {
						if err := s.Settle(ctx, tenant, req.Topic, a.Seq, req.Attempt); err != nil {
							b.Error(err)
							return
						}
					}
				}
			})
		})
	}
}

// TestPendingKeyLifetime: a topic's pending key always expires, never sooner than its longest
// mark — whether the allocation finds it missing, live, or holding only expired marks.
func TestPendingKeyLifetime(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	k, _ := KeysOf(tenant)
	pending := func(topic string) string { return k.Group(TopicGroup(topic)).Pending(topic) }
	s, ms := NewSeqAllocator(c, time.Hour), NewMonthState(c)
	m := month.Month(203106)
	activateMonth(t, ms, tenant, m)
	allocate := func(t *testing.T, topic, id string, pendingFor time.Duration) {
		t.Helper()
		if err := s.Reseed(t.Context(), tenant, topic, 0); err != nil {
			t.Fatal(err)
		}
		req := seq.Request{Topic: topic, From: 3, ClientMsgID: id, MsgID: 9, Hash: "h", MonthOverride: m, Attempt: id, PendingFor: pendingFor}
		if _, err := s.Allocate(t.Context(), tenant, req); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("a missing key gets the mark's expiry", func(t *testing.T) {
		allocate(t, "grp_1", "a", time.Minute)
		if got := pttl(t, c, pending("grp_1")); got < time.Minute-5*time.Second || got > time.Minute {
			t.Errorf("PTTL = %v; want about a minute", got)
		}
	})
	t.Run("a shorter mark never shortens the key", func(t *testing.T) {
		allocate(t, "grp_1", "b", time.Second)
		if got := pttl(t, c, pending("grp_1")); got < time.Minute-5*time.Second {
			t.Errorf("PTTL = %v; want about a minute still", got)
		}
	})
	t.Run("a key emptied by pruning expires again", func(t *testing.T) {
		key := pending("grp_2")
		// Only an expired mark left, under a key expiry longer than the next mark's.
		if err := c.Do(t.Context(), c.B().Zadd().Key(key).ScoreMember().ScoreMember(1, "1:old").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(t.Context(), c.B().Pexpire().Key(key).Milliseconds(time.Hour.Milliseconds()).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		allocate(t, "grp_2", "c", time.Minute)
		if got := pttl(t, c, key); got < time.Minute-5*time.Second || got > time.Hour {
			t.Errorf("PTTL = %v; want an expiry", got)
		}
		n, err := c.Do(t.Context(), c.B().Zcard().Key(key).Build()).AsInt64()
		if err != nil || n != 1 {
			t.Errorf("ZCARD = %d, %v; want the new mark alone", n, err)
		}
	})
}

// activateMonth marks m ready and makes it the active month of every slot group, as the
// shard manager does.
func activateMonth(tb testing.TB, ms *MonthState, tenant string, m month.Month) {
	tb.Helper()
	for g := range ms.Groups() {
		if err := ms.MarkReady(tb.Context(), tenant, g, m); err != nil {
			tb.Fatal(err)
		}
		if got, err := ms.Advance(tb.Context(), tenant, g, m); err != nil || got != m {
			tb.Fatalf("Advance(group %d, %s) = %s, %v", g, m, got, err)
		}
	}
}

// scriptCounter is a client that counts the script calls made through it.
type scriptCounter struct {
	rueidis.Client
	scripts atomic.Int64
}

func (c *scriptCounter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.count(cmd)
	return c.Client.Do(ctx, cmd)
}

func (c *scriptCounter) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	for _, cmd := range cmds {
		c.count(cmd)
	}
	return c.Client.DoMulti(ctx, cmds...)
}

func (c *scriptCounter) count(cmd rueidis.Completed) {
	if name := cmd.Commands()[0]; name == "EVALSHA" || name == "EVAL" {
		c.scripts.Add(1)
	}
}

// TestConcurrentAllocationsShareScriptCalls: sends of one slot group that come while a call
// of the group is in flight go together in the next call (issue 30 part 2), each still
// handed its own seq, in one run 1..N, and its own pending mark.
func TestConcurrentAllocationsShareScriptCalls(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	ms := NewMonthState(c)
	m := month.Month(203106)
	activateMonth(t, ms, tenant, m)
	counter := &scriptCounter{Client: c}
	s := NewSeqAllocator(counter, time.Hour)
	if err := s.Reseed(t.Context(), tenant, "grp_1", 0); err != nil {
		t.Fatal(err)
	}
	counter.scripts.Store(0)
	const sends = 200
	seqs := make([]int64, sends)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range sends {
		wg.Go(func() {
			<-start
			req := seq.Request{Topic: "grp_1", From: 3, ClientMsgID: fmt.Sprint("c", i), MsgID: int64(i + 1), Hash: "h", MonthOverride: m,
				Attempt: fmt.Sprint("a", i), PendingFor: time.Minute}
			a, err := s.Allocate(t.Context(), tenant, req)
			if err != nil || a.Existing || a.Month != m {
				t.Errorf("send %d: %+v, %v", i, a, err)
			}
			seqs[i] = a.Seq
		})
	}
	close(start)
	wg.Wait()
	slices.Sort(seqs)
	for i, n := range seqs {
		if n != int64(i+1) {
			t.Fatalf("seqs %v; want 1..%d once each", seqs, sends)
		}
	}
	// A call reads the topic's pending key once and marks each of its sends there.
	k, _ := topicKeys(tenant, "grp_1")
	pending := k.Pending("grp_1")
	if n, err := c.Do(t.Context(), c.B().Zcard().Key(pending).Build()).AsInt64(); err != nil || n != sends {
		t.Errorf("pending marks: %d, %v; want %d", n, err, sends)
	}
	if ttl, err := c.Do(t.Context(), c.B().Pttl().Key(pending).Build()).AsInt64(); err != nil || ttl <= 0 || ttl > time.Minute.Milliseconds() {
		t.Errorf("pending key's PTTL: %d, %v; want (0, 1 min]", ttl, err)
	}
	if got := counter.scripts.Load(); got > sends/2 {
		t.Errorf("%d sends took %d script calls; want them batched", sends, got)
	} else {
		t.Logf("%d sends in %d script calls", sends, got)
	}
}

// gatedScripts is a client whose first script call waits until open is closed.
type gatedScripts struct {
	rueidis.Client
	first sync.Once
	open  chan struct{}
}

func (c *gatedScripts) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if name := cmd.Commands()[0]; name == "EVALSHA" || name == "EVAL" {
		c.first.Do(func() { <-c.open })
	}
	return c.Client.Do(ctx, cmd)
}

// TestAllocationGivenUpWhileQueuedIsNotSent: a send that gives up (its context ends) while it
// waits for the call in flight of its group is left out of the next call, so it takes no seq.
func TestAllocationGivenUpWhileQueuedIsNotSent(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	m := month.Month(203106)
	activateMonth(t, NewMonthState(c), tenant, m)
	if err := NewSeqAllocator(c, time.Hour).Reseed(t.Context(), tenant, "grp_1", 0); err != nil {
		t.Fatal(err)
	}
	gated := &gatedScripts{Client: c, open: make(chan struct{})}
	s := NewSeqAllocator(gated, time.Hour)
	req := func(id string) seq.Request {
		return seq.Request{Topic: "grp_1", From: 3, ClientMsgID: id, MsgID: 9, Hash: "h", MonthOverride: m}
	}
	first := make(chan seq.Allocation, 1)
	go func() {
		a, err := s.Allocate(t.Context(), tenant, req("first"))
		if err != nil {
			t.Error(err)
		}
		first <- a
	}()
	// The first call is in flight (held by the gate): the next send queues behind it.
	k, _ := topicKeys(tenant, "grp_1")
	queued := func() int {
		s.batches.mu.Lock()
		defer s.batches.mu.Unlock()
		if q := s.batches.groups[k.ActiveMonth()]; q != nil {
			return len(q.waiting)
		}
		return -1
	}
	for queued() < 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := s.Allocate(ctx, tenant, req("gave-up"))
		gaveUp <- err
	}()
	for queued() < 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the send that gave up: %v; want context.Canceled", err)
	}
	close(gated.open)
	if a := <-first; a.Seq != 1 {
		t.Fatalf("first send: seq %d; want 1", a.Seq)
	}
	a, err := s.Allocate(t.Context(), tenant, req("next"))
	if err != nil || a.Seq != 2 {
		t.Fatalf("the send after: %+v, %v; want seq 2 (the one that gave up took none)", a, err)
	}
}

// TestBatchedSendsEachAsIfAlone: the sends of one seq script call each get what they would
// have got alone, one call after another, in arrival order (issue 30 part 2, DESIGN §4 step 4):
// consecutive seqs per topic, the dedup of a known client_msg_id (also of one sent earlier in
// the same call), a reallocation, their own error for a topic without a counter, and one
// active month moving forward through the call (an override's switch, a floor). The same
// requests run one by one for one tenant and batched behind a held first call for another;
// the outcomes must be equal, on a single Redis and on a Cluster.
func TestBatchedSendsEachAsIfAlone(t *testing.T) {
	const x = "grp_1"
	var y, z string // other topics of x's slot group; z has no counter
	for i := 2; z == ""; i++ {
		if name := fmt.Sprint("grp_", i); TopicGroup(name) == TopicGroup(x) {
			if y == "" {
				y = name
			} else {
				z = name
			}
		}
	}
	m := month.Month(203106)
	next, later := m.Next(), m.Next().Next().Next()
	reqs := []seq.Request{
		{Topic: x, ClientMsgID: "c0", MsgID: 1, MonthOverride: m},
		{Topic: x, ClientMsgID: "c1", MsgID: 2, MonthOverride: m},
		{Topic: x, ClientMsgID: "c0", MsgID: 3, MonthOverride: m}, // a retry of the first
		{Topic: z, ClientMsgID: "c2", MsgID: 4, MonthOverride: m},
		{Topic: x, ClientMsgID: "c3", MsgID: 5, MonthOverride: next}, // switches the group
		{Topic: y, ClientMsgID: "c4", MsgID: 6, MonthOverride: m},    // never back
		{Topic: x, ClientMsgID: "c1", MsgID: 7, MonthOverride: m, Reallocate: true},
		{Topic: x, ClientMsgID: "c6", MsgID: 8, MonthOverride: m, Floor: later},
		{Topic: x, ClientMsgID: "c1", MsgID: 9, MonthOverride: m}, // the reallocated record
		{Topic: y, ClientMsgID: "c7", MsgID: 10, MonthOverride: m},
	}
	type outcome struct {
		seq, msgID       int64
		month            month.Month
		existing, failed bool
		missing          bool // seq.ErrCounterMissing
	}
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		prepare := func() string {
			tenant := testTenant(t, c)
			ms := NewMonthState(c)
			activateMonth(t, ms, tenant, m)
			if err := ms.MarkReady(t.Context(), tenant, TopicGroup(x), next); err != nil {
				t.Fatal(err)
			}
			for _, topic := range []string{x, y} {
				if err := NewSeqAllocator(c, time.Hour).Reseed(t.Context(), tenant, topic, 0); err != nil {
					t.Fatal(err)
				}
			}
			return tenant
		}
		run := func(s *SeqAllocator, tenant string, i int) outcome {
			req := reqs[i]
			req.From, req.Hash = 3, "h"
			a, err := s.Allocate(t.Context(), tenant, req)
			switch {
			case errors.Is(err, seq.ErrCounterMissing):
				return outcome{missing: true}
			case err != nil:
				t.Errorf("send %d: %v", i, err)
				return outcome{failed: true}
			}
			return outcome{seq: a.Seq, msgID: a.MsgID, month: a.Month, existing: a.Existing}
		}

		alone := prepare()
		want := make([]outcome, len(reqs))
		for i := range reqs {
			want[i] = run(NewSeqAllocator(c, time.Hour), alone, i)
		}

		batched := prepare()
		counter := &scriptCounter{Client: c}
		gated := &gatedScripts{Client: counter, open: make(chan struct{})}
		s := NewSeqAllocator(gated, time.Hour)
		k, _ := topicKeys(batched, x)
		got := make([]outcome, len(reqs))
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Go(func() { got[i] = run(s, batched, i) })
			// Each send joins the queue before the next comes, so the arrival order is reqs'.
			waitFor(t, func() bool { return queuedIn(s.batches, k.ActiveMonth()) == i })
		}
		close(gated.open)
		wg.Wait()
		if !slices.Equal(got, want) {
			t.Errorf("batched outcomes\n%+v\nwant, as one by one,\n%+v", got, want)
		}
		if n := counter.scripts.Load(); n != 2 {
			t.Errorf("%d script calls; want 2 (the first alone, then the rest together)", n)
		}
	})
}

// TestSeqsAround2Pow53AreExact: the allocation formats INCR's reply below 2^53 and reads the
// counter back past it (lua.go), so the seqs on both sides of the edge come back exact.
func TestSeqsAround2Pow53AreExact(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	s := allocatorThisMonth(t, c, tenant)
	const edge = int64(1) << 53
	for i, floor := range []int64{edge - 3, edge - 2, edge - 1, edge, edge + 1} {
		topic := fmt.Sprintf("grp_%d", i+1)
		if err := s.Reseed(t.Context(), tenant, topic, floor); err != nil {
			t.Fatal(err)
		}
		for n := range int64(2) {
			a, err := s.Allocate(t.Context(), tenant, seq.Request{Topic: topic, From: 1, ClientMsgID: strconv.FormatInt(n, 10), MsgID: 1, Hash: "h"})
			if err != nil {
				t.Fatal(err)
			}
			if a.Seq != floor+1+n {
				t.Fatalf("after reseed to %d, allocation %d got seq %d; want %d", floor, n, a.Seq, floor+1+n)
			}
		}
	}
}

// allocatorThisMonth is an allocator (idempotency records kept a minute) of tenant, whose
// active month is Redis's current one.
func allocatorThisMonth(tb testing.TB, c rueidis.Client, tenant string) *SeqAllocator {
	tb.Helper()
	ms := NewMonthState(c)
	now, err := ms.Now(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	activateMonth(tb, ms, tenant, month.Of(now))
	return NewSeqAllocator(c, time.Minute)
}
