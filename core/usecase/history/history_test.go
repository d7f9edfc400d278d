package history_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
)

const (
	tenant = "t1"
	reader = int64(2) // a member of the fixture's group
)

// The fixture's months: m0 holds seqs 1-30 of its topic, m1 (active) holds 31-60.
var (
	m0 = month.Month(203105)
	m1 = month.Month(203106)
)

type fixture struct {
	t       *testing.T
	shards  *memory.ShardStore
	store   *memory.MessageStore
	routes  *memory.RouteCache
	months  *memory.MonthState
	hot     *memory.HotCache
	dellog  *memory.DeleteLog
	metrics *memory.Metrics
	repairs *repairRecorder
	deps    history.Deps
	topic   string
	msgs    map[int64]message.Message // as stored, by seq
	lastID  int64
}

// repairRecorder is the route repair hook, counting requests per topic.
type repairRecorder struct {
	mu     sync.Mutex
	topics []string
}

func (r *repairRecorder) Enqueue(_ context.Context, _, topic string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.topics = append(r.topics, topic)
	return nil
}

func (r *repairRecorder) requested() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.topics)
}

// newFixture stores a group topic with seqs 1-30 in m0 and 31-60 in m1, none of it cached.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(m1.Start().Add(10 * 24 * time.Hour))
	f := &fixture{
		t: t, shards: memory.NewShardStore(), routes: memory.NewRouteCache(),
		months: memory.NewMonthState(clock.Now), hot: memory.NewHotCache(clock.Now, 365*24*time.Hour, 1000), // the fixture spans two months
		metrics: memory.NewMetrics(), repairs: &repairRecorder{}, msgs: map[int64]message.Message{},
	}
	f.store = memory.NewMessageStore(f.shards)
	f.dellog = memory.NewDeleteLog(f.shards)
	for _, m := range []month.Month{m0.Add(-3), m0.Add(-2), m0.Add(-1), m0, m1} {
		f.writable(m)
	}
	if _, err := f.months.Advance(ctx, tenant, 0, m1); err != nil {
		t.Fatal(err)
	}
	dir := memory.NewDirectory()
	conv, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 500, []int64{reader}, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.topic = conv.Topic
	ids := memory.NewIDs(clock)
	f.deps = history.Deps{
		Store: f.store, Routes: f.routes, Months: f.months, Metrics: f.metrics,
		Resolver: conversation.NewResolver(dir, ids, membership.New(dir, clock, time.Minute)),
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Hot:      f.hot, Hidden: f.dellog, Search: f.store, Repairs: f.repairs,
	}
	for s := int64(1); s <= 60; s++ {
		m := m0
		if s > 30 {
			m = m1
		}
		f.append(f.topic, s, m)
	}
	return f
}

func (f *fixture) svc() *history.Service { return history.New(f.deps) }

func (f *fixture) writable(m month.Month) {
	f.t.Helper()
	ctx := context.Background()
	if err := f.shards.EnsureTable(ctx, tenant, m); err != nil {
		f.t.Fatal(err)
	}
	if err := f.shards.SetState(ctx, tenant, m, shard.Prepared, shard.Writable); err != nil {
		f.t.Fatal(err)
	}
	if err := f.months.MarkReady(ctx, tenant, 0, m); err != nil {
		f.t.Fatal(err)
	}
}

// append stores one text message, created seq minutes into its month.
func (f *fixture) append(topicName string, s int64, m month.Month) message.Message {
	f.t.Helper()
	return f.appendAt(topicName, s, m, m.Start().Add(time.Duration(s)*time.Minute))
}

func (f *fixture) appendAt(topicName string, s int64, m month.Month, created time.Time) message.Message {
	f.t.Helper()
	f.lastID++
	msg := message.Message{
		Topic: topicName, GroupID: 10, ConversationID: 500, Seq: s, MsgID: f.lastID, From: 1,
		ClientMsgID: fmt.Sprintf("c%d", s), Type: "text", Content: json.RawMessage(fmt.Sprintf(`{"text":"m%d"}`, s)),
		Status: message.StatusNormal, Version: 1, CreatedAt: created, Month: m,
	}
	if _, err := f.store.Append(context.Background(), tenant, msg, "h"); err != nil {
		f.t.Fatal(err)
	}
	if topicName == f.topic {
		f.msgs[s] = msg
	}
	return msg
}

// cache puts the listed seqs of the topic into the hot cache.
func (f *fixture) cache(seqs ...int64) {
	f.t.Helper()
	for _, s := range seqs {
		if err := f.hot.Put(context.Background(), tenant, f.msgs[s]); err != nil {
			f.t.Fatal(err)
		}
	}
}

// sources returns how many queries each latency source recorded so far.
func (f *fixture) sources() map[string]float64 {
	out := map[string]float64{}
	for _, s := range []string{"redis", "single_month", "cross_month"} {
		out[s] = f.metrics.Count("group_message_query_latency", s)
	}
	return out
}

// wantSource checks that exactly one more query used source since before.
func (f *fixture) wantSource(before map[string]float64, source string) {
	f.t.Helper()
	after := f.sources()
	for s, n := range after {
		want := before[s]
		if s == source {
			want++
		}
		if n != want {
			f.t.Fatalf("latency sources %v after %v; want one more %s", after, before, source)
		}
	}
}

func seqs(from, to int64) []int64 {
	var out []int64
	if from <= to {
		for s := from; s <= to; s++ {
			out = append(out, s)
		}
		return out
	}
	for s := from; s >= to; s-- {
		out = append(out, s)
	}
	return out
}

func seqsOf(ms []message.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func without(all []int64, drop ...int64) []int64 {
	return slices.DeleteFunc(slices.Clone(all), func(s int64) bool { return slices.Contains(drop, s) })
}

func TestHistoryUsesTheCacheOnlyWhenItCoversThePage(t *testing.T) {
	all := seqs(1, 60)
	cases := []struct {
		name   string
		cached []int64
		before int64
		limit  int
		want   []int64
		source string
	}{
		{"complete cache, newest page", all, 0, 50, seqs(60, 11), "redis"},
		{"complete cache, page down to seq 1", all, 11, 50, seqs(10, 1), "redis"},
		{"cache lacks the newest", seqs(1, 59), 0, 50, seqs(60, 11), "cross_month"},
		{"hole inside the page", without(all, 45), 0, 50, seqs(60, 11), "cross_month"},
		{"hole below the page", without(all, 45), 0, 10, seqs(60, 51), "redis"},
		{"trimmed above the page end", seqs(40, 60), 0, 30, seqs(60, 31), "single_month"},
		{"trimmed below the page end", seqs(40, 60), 0, 10, seqs(60, 51), "redis"},
		{"no cache", nil, 0, 20, seqs(60, 41), "single_month"},
		{"cursor past the newest", all, 100, 5, seqs(60, 56), "redis"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.cache(tc.cached...)
			before := f.sources()
			got, err := f.svc().History(context.Background(), history.HistoryRequest{
				Tenant: tenant, Topic: f.topic, Before: tc.before, Limit: tc.limit,
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(seqsOf(got), tc.want) {
				t.Fatalf("History = %v, want %v", seqsOf(got), tc.want)
			}
			f.wantSource(before, tc.source)
		})
	}
}

func TestSyncUsesTheCacheOnlyWhenItCoversThePage(t *testing.T) {
	all := seqs(1, 60)
	cases := []struct {
		name     string
		cached   []int64
		since    int64
		limit    int
		want     []int64
		wantMore bool
		source   string
	}{
		{"complete cache, middle page", all, 10, 5, seqs(11, 15), true, "redis"},
		{"complete cache, last page", all, 55, 10, seqs(56, 60), false, "redis"},
		{"complete cache, from the start", all, 0, 5, seqs(1, 5), true, "redis"},
		{"caught up", all, 60, 10, nil, false, "redis"},
		{"cache lacks the newest", seqs(1, 59), 55, 10, seqs(56, 60), false, "single_month"},
		{"cursor not cached", seqs(6, 60), 5, 5, seqs(6, 10), true, "single_month"},
		{"start not cached", seqs(2, 60), 0, 5, seqs(1, 5), true, "single_month"},
		{"hole inside the page", without(all, 13), 10, 5, seqs(11, 15), true, "single_month"},
		{"hole after the page", without(all, 17), 10, 5, seqs(11, 15), true, "redis"},
		{"page across months from MySQL", nil, 28, 5, seqs(29, 33), true, "cross_month"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.cache(tc.cached...)
			before := f.sources()
			res, err := f.svc().Sync(context.Background(), history.SyncRequest{
				Tenant: tenant, Topic: f.topic, Since: tc.since, Limit: tc.limit,
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(seqsOf(res.Messages), tc.want) || res.HasMore != tc.wantMore {
				t.Fatalf("Sync = %v has_more=%v, want %v has_more=%v", seqsOf(res.Messages), res.HasMore, tc.want, tc.wantMore)
			}
			wantLast := tc.since
			if len(tc.want) > 0 {
				wantLast = tc.want[len(tc.want)-1]
			}
			if res.LastSeq != wantLast {
				t.Fatalf("last_seq %d, want %d", res.LastSeq, wantLast)
			}
			f.wantSource(before, tc.source)
		})
	}
}

// TestCachedPagesHideWhatTablePagesHide: the viewer's deleted ranges and tombstones are left out
// of cached pages exactly as the month-table query leaves them out.
func TestCachedPagesHideWhatTablePagesHide(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		cache  bool
		hidden bool // Deps.Hidden set
		user   int64
		source string
	}{
		{"from the cache", true, true, reader, "redis"},
		{"from the tables", false, true, reader, "single_month"},
		{"user read without a range reader skips the cache", true, false, reader, "single_month"},
		{"admin read needs no range reader", true, false, 0, "redis"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			// Seq 61 is a tombstone: a second attempt of seq 60's client_msg_id.
			dup := f.msgs[60]
			dup.Seq, dup.MsgID = 61, dup.MsgID+1
			if _, err := f.store.Append(ctx, tenant, dup, "h"); err != nil {
				t.Fatal(err)
			}
			tomb, err := f.store.Get(ctx, tenant, m1, f.topic, 61)
			if err != nil || tomb.Status != message.StatusDeleted {
				t.Fatalf("tombstone %+v %v", tomb, err)
			}
			f.msgs[61] = tomb
			if err := f.dellog.HideRange(ctx, tenant, f.topic, reader, 55, 58); err != nil {
				t.Fatal(err)
			}
			if tc.cache {
				f.cache(seqs(1, 61)...)
			}
			if !tc.hidden {
				f.deps.Hidden = nil
			}
			wantHistory := seqs(60, 51)
			if tc.user == reader {
				wantHistory = []int64{60, 59, 58, 54, 53, 52, 51, 50, 49, 48}
			}
			before := f.sources()
			got, err := f.svc().History(ctx, history.HistoryRequest{Tenant: tenant, User: tc.user, Topic: f.topic, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(seqsOf(got), wantHistory) {
				t.Fatalf("History = %v, want %v", seqsOf(got), wantHistory)
			}
			f.wantSource(before, tc.source)
			res, err := f.svc().Sync(ctx, history.SyncRequest{Tenant: tenant, User: tc.user, Topic: f.topic, Since: 52, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			wantSync := seqs(53, 61) // sync shows the tombstone so the client sees no gap
			if tc.user == reader {
				wantSync = without(wantSync, 55, 56, 57)
			}
			if !slices.Equal(seqsOf(res.Messages), wantSync) || res.HasMore {
				t.Fatalf("Sync = %v has_more=%v, want %v", seqsOf(res.Messages), res.HasMore, wantSync)
			}
		})
	}
}

func TestContext(t *testing.T) {
	cases := []struct {
		name    string
		cached  bool
		seq     int64
		n       int
		want    []int64
		code    apperr.Code
		sources string
	}{
		{"around the last message of a month", false, 30, 5, seqs(25, 35), 0, "cross_month"},
		{"around the first message of a month", false, 31, 3, seqs(28, 34), 0, "cross_month"},
		{"inside one month", false, 45, 3, seqs(42, 48), 0, "single_month"},
		{"at the topic start", false, 1, 3, seqs(1, 4), 0, "single_month"},
		{"at the topic end", false, 60, 3, seqs(57, 60), 0, "single_month"},
		{"default size", false, 30, 0, seqs(10, 50), 0, "cross_month"},
		{"from the cache", true, 45, 3, seqs(42, 48), 0, "redis"},
		{"target beyond the end", false, 61, 3, nil, apperr.NotFound, ""},
		{"bad size", false, 30, history.MaxContext + 1, nil, apperr.InvalidArgument, ""},
		{"bad seq", false, 0, 3, nil, apperr.InvalidArgument, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.cached {
				f.cache(seqs(1, 60)...)
			}
			before := f.sources()
			got, err := f.svc().Context(context.Background(), history.ContextRequest{
				Tenant: tenant, User: reader, Topic: f.topic, Seq: tc.seq, N: tc.n,
			})
			if apperr.CodeOf(err) != tc.code {
				t.Fatalf("err = %v, want code %d", err, tc.code)
			}
			if !slices.Equal(seqsOf(got), tc.want) {
				t.Fatalf("Context = %v, want %v", seqsOf(got), tc.want)
			}
			if tc.sources != "" {
				f.wantSource(before, tc.sources)
			}
		})
	}
}

func TestContextLeavesOutHiddenAndDeleted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.dellog.HideRange(ctx, tenant, f.topic, reader, 29, 31); err != nil {
		t.Fatal(err)
	}
	got, err := f.svc().Context(ctx, history.ContextRequest{Tenant: tenant, User: reader, Topic: f.topic, Seq: 31, N: 3})
	if err != nil || !slices.Equal(seqsOf(got), []int64{26, 27, 28, 31, 32, 33, 34}) {
		t.Fatalf("Context = %v, %v", seqsOf(got), err)
	}
	if _, err := f.svc().Context(ctx, history.ContextRequest{Tenant: tenant, User: reader, Topic: f.topic, Seq: 30, N: 3}); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("context around a hidden message: %v", err)
	}
}

// lostMirror is a message store whose route mirror lost the topic's rows.
type lostMirror struct{ *memory.MessageStore }

func (lostMirror) Segments(context.Context, string, string) (route.Route, error) { return nil, nil }

// failingMonths is a month state whose Redis is down.
type failingMonths struct{ *memory.MonthState }

func (failingMonths) Active(context.Context, string) (month.Month, bool, error) {
	return 0, false, errors.New("redis down")
}

// TestUnroutedTopicReadsRecentMonthsOnly: with neither a Redis route nor a mirror row, a query
// reads the active month and the two before it and asks for a repair (seed 000 §6.4) —
// never every table.
func TestUnroutedTopicReadsRecentMonthsOnly(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	old := f.append("grp_11", 1, m0.Add(-3)) // out of reach: four months back
	f.append("grp_11", 2, m0.Add(-1))
	f.append("grp_11", 3, m1)
	f.deps.Store = lostMirror{f.store}
	svc := f.svc()
	got, err := svc.History(ctx, history.HistoryRequest{Tenant: tenant, Topic: "grp_11", Limit: 50})
	if err != nil || !slices.Equal(seqsOf(got), []int64{3, 2}) {
		t.Fatalf("History = %v, %v; want [3 2]", seqsOf(got), err)
	}
	if n := f.metrics.Count("group_message_query_tables"); n != 1 {
		t.Fatalf("%v observations of tables", n)
	}
	if got := f.repairs.requested(); !slices.Equal(got, []string{"grp_11"}) {
		t.Fatalf("repairs requested for %v", got)
	}
	if m, err := svc.Get(ctx, tenant, 0, "grp_11", 2); err != nil || m.Seq != 2 {
		t.Fatalf("Get(2) = %+v, %v", m, err)
	}
	if _, err := svc.Get(ctx, tenant, 0, "grp_11", old.Seq); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("Get of a message past the bound: %v", err)
	}
	f.deps.RecentMonths = 5
	got, err = f.svc().History(ctx, history.HistoryRequest{Tenant: tenant, Topic: "grp_11", Limit: 50})
	if err != nil || !slices.Equal(seqsOf(got), []int64{3, 2, 1}) {
		t.Fatalf("History over 5 months = %v, %v", seqsOf(got), err)
	}

	f.deps.Months = failingMonths{f.months}
	if _, err := f.svc().History(ctx, history.HistoryRequest{Tenant: tenant, Topic: "grp_11"}); apperr.CodeOf(err) != apperr.Busy {
		t.Fatalf("unrouted read without month state: %v, want 50301", err)
	}
}

// TestReadsFollowTheMirrorWhereARolledBackRouteMisses: a Redis rollback (DESIGN §1.13) can
// leave a topic's cached route without a month a later send did not bring back (a gap between
// two segments) or months behind the active one. Reads then follow the mirror and ask for a
// rebuild; a gap the mirror has too (seqs no send stored) costs a mirror read and nothing else.
func TestReadsFollowTheMirrorWhereARolledBackRouteMisses(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		stored map[month.Month][]int64 // the topic's seqs by month
		cached route.Route             // the Redis route after the rollback
		want   []int64                 // what a sync from 0 returns
		repair bool
	}{
		{
			name:   "a month lost between two",
			stored: map[month.Month][]int64{m0.Add(-2): {1, 2}, m0.Add(-1): {3, 4}, m0: {5, 6}},
			cached: route.Route{{Month: m0.Add(-2), MinSeq: 1, MaxSeq: 2, Count: 2}, {Month: m0, MinSeq: 5, MaxSeq: 6, Count: 2}},
			want:   seqs(1, 6), repair: true,
		},
		{
			name:   "a month cut short before the next",
			stored: map[month.Month][]int64{m0.Add(-1): {1, 2, 3, 4}, m0: {5, 6}},
			cached: route.Route{{Month: m0.Add(-1), MinSeq: 1, MaxSeq: 2, Count: 2}, {Month: m0, MinSeq: 5, MaxSeq: 6, Count: 2}},
			want:   seqs(1, 6), repair: true,
		},
		{
			name:   "months behind the active one, past the speculative reach",
			stored: map[month.Month][]int64{m0.Add(-3): {1, 2}, m1: {3}},
			cached: route.Route{{Month: m0.Add(-3), MinSeq: 1, MaxSeq: 2, Count: 2}},
			want:   seqs(1, 3), repair: true,
		},
		{
			name:   "holes no send stored",
			stored: map[month.Month][]int64{m0.Add(-2): {1, 2}, m0: {5, 6}},
			cached: route.Route{{Month: m0.Add(-2), MinSeq: 1, MaxSeq: 2, Count: 2}, {Month: m0, MinSeq: 5, MaxSeq: 6, Count: 2}},
			want:   []int64{1, 2, 5, 6},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			const topic = "grp_11"
			for m, ss := range c.stored {
				for _, sq := range ss {
					f.append(topic, sq, m)
				}
			}
			if err := f.routes.Replace(ctx, tenant, topic, c.cached); err != nil {
				t.Fatal(err)
			}
			svc := f.svc()
			got, err := svc.Sync(ctx, history.SyncRequest{Tenant: tenant, Topic: topic, Limit: 50})
			if err != nil || !slices.Equal(seqsOf(got.Messages), c.want) {
				t.Fatalf("Sync = %v, %v; want %v", seqsOf(got.Messages), err, c.want)
			}
			back, err := svc.History(ctx, history.HistoryRequest{Tenant: tenant, Topic: topic, Limit: 50})
			newestFirst := slices.Clone(c.want)
			slices.Reverse(newestFirst)
			if err != nil || !slices.Equal(seqsOf(back), newestFirst) {
				t.Fatalf("History = %v, %v; want %v", seqsOf(back), err, newestFirst)
			}
			for _, sq := range c.want {
				if m, err := svc.Get(ctx, tenant, 0, topic, sq); err != nil || m.Seq != sq {
					t.Fatalf("Get(%d) = %+v, %v", sq, m, err)
				}
			}
			if got := f.repairs.requested(); (len(got) > 0) != c.repair || slices.ContainsFunc(got, func(s string) bool { return s != topic }) {
				t.Fatalf("repairs requested for %v, want some for %s: %v", got, topic, c.repair)
			}
			if n := f.metrics.Count("group_message_route_miss_total"); (n > 0) != c.repair {
				t.Fatalf("%v route misses counted, want some: %v", n, c.repair)
			}
		})
	}
}

// countedMirror counts the reads of the route mirror.
type countedMirror struct {
	*memory.MessageStore
	reads *atomic.Int64
}

func (c countedMirror) Segments(ctx context.Context, tenant, topic string) (route.Route, error) {
	c.reads.Add(1)
	return c.MessageStore.Segments(ctx, tenant, topic)
}

// TestARequestReadsTheMirrorOnce: a request may consult the route mirror for a route Redis
// lost, for a gap in the cached one, for the months behind the active one and on each side of
// a context read; MySQL is asked once a request, and the reads still find every message.
func TestARequestReadsTheMirrorOnce(t *testing.T) {
	ctx := context.Background()
	const topic = "grp_11"
	cases := []struct {
		name   string
		cached route.Route // nil: Redis has no route for the topic
	}{
		{"the redis route lost", nil},
		{"a gap, and months behind the active one", route.Route{
			{Month: m0.Add(-3), MinSeq: 1, MaxSeq: 2, Count: 2}, {Month: m0.Add(-1), MinSeq: 5, MaxSeq: 6, Count: 2},
		}},
	}
	requests := []struct {
		name string
		do   func(*history.Service) ([]int64, error)
		want []int64
	}{
		{"sync", func(svc *history.Service) ([]int64, error) {
			res, err := svc.Sync(ctx, history.SyncRequest{Tenant: tenant, Topic: topic, Limit: 50})
			return seqsOf(res.Messages), err
		}, seqs(1, 7)},
		{"history", func(svc *history.Service) ([]int64, error) {
			got, err := svc.History(ctx, history.HistoryRequest{Tenant: tenant, Topic: topic, Limit: 50})
			return seqsOf(got), err
		}, []int64{7, 6, 5, 4, 3, 2, 1}},
		{"context", func(svc *history.Service) ([]int64, error) {
			got, err := svc.Context(ctx, history.ContextRequest{Tenant: tenant, Topic: topic, Seq: 5, N: 2})
			return seqsOf(got), err
		}, seqs(3, 7)},
		{"get", func(svc *history.Service) ([]int64, error) {
			m, err := svc.Get(ctx, tenant, 0, topic, 7)
			return []int64{m.Seq}, err
		}, []int64{7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			for m, ss := range map[month.Month][]int64{m0.Add(-3): {1, 2}, m0.Add(-2): {3, 4}, m0.Add(-1): {5, 6}, m0: {7}} {
				for _, sq := range ss {
					f.append(topic, sq, m)
				}
			}
			reads := new(atomic.Int64)
			f.deps.Store = countedMirror{f.store, reads}
			if c.cached == nil {
				f.deps.Routes = hiddenRoute{f.routes}
			}
			svc := f.svc()
			for _, r := range requests {
				if c.cached != nil {
					if err := f.routes.Replace(ctx, tenant, topic, c.cached); err != nil {
						t.Fatal(err)
					}
				}
				reads.Store(0)
				got, err := r.do(svc)
				if err != nil || !slices.Equal(got, r.want) {
					t.Fatalf("%s = %v, %v; want %v", r.name, got, err, r.want)
				}
				if n := reads.Load(); n != 1 {
					t.Fatalf("%s read the mirror %d times, want once", r.name, n)
				}
			}
		})
	}
}

// hiddenRoute reports every route as missing while the cache below holds one, as when a
// concurrent reader rebuilt the route between this reader's miss and its write-back.
type hiddenRoute struct{ *memory.RouteCache }

func (hiddenRoute) Segments(context.Context, string, string) (route.Route, bool, error) {
	return nil, false, nil
}

func TestRouteRebuildNeverOverwritesANewerRoute(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	newer := route.Route{
		{Month: m0, MinSeq: 1, MaxSeq: 30, Count: 30},
		{Month: m1, MinSeq: 31, MaxSeq: 70, Count: 40},
	}
	if err := f.routes.Replace(ctx, tenant, f.topic, newer); err != nil {
		t.Fatal(err)
	}
	f.deps.Routes = hiddenRoute{f.routes}
	if _, err := f.svc().History(ctx, history.HistoryRequest{Tenant: tenant, Topic: f.topic}); err != nil {
		t.Fatal(err)
	}
	got, _, err := f.routes.Segments(ctx, tenant, f.topic)
	if err != nil || len(got) != 2 || got[1].MaxSeq != 70 {
		t.Fatalf("route after a racing rebuild: %+v, %v", got, err)
	}
	if n := f.metrics.Count("group_message_route_rebuild_total", "ok"); n != 0 {
		t.Fatalf("%v rebuilds counted", n)
	}

	// Without a route the mirror's is written.
	f = newFixture(t)
	if _, err := f.svc().History(ctx, history.HistoryRequest{Tenant: tenant, Topic: f.topic}); err != nil {
		t.Fatal(err)
	}
	got, found, err := f.routes.Segments(ctx, tenant, f.topic)
	if err != nil || !found || len(got) != 2 || got[1].MaxSeq != 60 {
		t.Fatalf("rebuilt route: %+v, %v, %v", got, found, err)
	}
}

func TestSearchValidatesTheRange(t *testing.T) {
	jan := time.Date(2031, 1, 31, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		from, to time.Time
		topic    string
		text     string
		code     apperr.Code
	}{
		{"three calendar months", jan, time.Date(2031, 3, 31, 23, 0, 0, 0, time.UTC), "", "", 0},
		{"ends at a month start", jan, time.Date(2031, 4, 1, 0, 0, 0, 0, time.UTC), "", "", 0},
		{"four calendar months", jan, time.Date(2031, 4, 1, 0, 0, 0, 1, time.UTC), "", "", apperr.InvalidArgument},
		{"from missing", time.Time{}, jan, "", "", apperr.InvalidArgument},
		{"to missing", jan, time.Time{}, "", "", apperr.InvalidArgument},
		{"empty range", jan, jan, "", "", apperr.InvalidArgument},
		{"reversed range", jan, jan.Add(-time.Hour), "", "", apperr.InvalidArgument},
		{"out of bounds", time.UnixMilli(0), time.UnixMilli(1), "", "", apperr.InvalidArgument},
		{"bad topic", jan, jan.Add(time.Hour), "im_group_messages_203101", "", apperr.InvalidArgument},
		{"text too long", jan, jan.Add(time.Hour), "", string(make([]byte, history.MaxSearchText+1)), apperr.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.svc().Search(context.Background(), history.SearchRequest{
				Tenant: tenant, Topic: tc.topic, Text: tc.text, From: tc.from, To: tc.to,
			})
			if apperr.CodeOf(err) != tc.code {
				t.Fatalf("err = %v, want code %d", err, tc.code)
			}
		})
	}
	f := newFixture(t)
	f.deps.Search = nil
	if _, err := f.svc().Search(context.Background(), history.SearchRequest{Tenant: tenant, From: jan, To: jan.Add(time.Hour)}); apperr.CodeOf(err) != apperr.Busy {
		t.Fatalf("search without a store: %v", err)
	}
}

func TestSearchMergesMonths(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	// grp_12's one message was created in m0's time but stored in m1: the month switched early.
	f.appendAt("grp_12", 1, m1, m0.Start().Add(5*time.Minute))
	cases := []struct {
		name     string
		topic    string
		text     string
		from, to time.Time
		limit    int
		want     []int64
	}{
		{"two months newest first", "", "", m0.Start().Add(28 * time.Minute), m1.Start().Add(33 * time.Minute), 50, seqs(32, 28)},
		{"limit keeps the newest", "", "", m0.Start(), m1.End(), 3, seqs(60, 58)},
		{"text", f.topic, "m3", m0.Start(), m1.End(), 50, append(seqs(39, 30), 3)},
		{"unknown topic", "grp_77", "", m0.Start(), m1.End(), 50, nil},
		{"topic stored in a month its range misses", "grp_12", "", m0.Start(), m0.Start().Add(time.Hour), 50, []int64{1}},
		{"tenant-wide reads only the months the range touches", "", "", m0.Start(), m0.Start().Add(time.Hour), 50, seqs(30, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.svc().Search(ctx, history.SearchRequest{
				Tenant: tenant, Topic: tc.topic, Text: tc.text, From: tc.from, To: tc.to, Limit: tc.limit,
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(seqsOf(got), tc.want) {
				t.Fatalf("Search = %v, want %v", seqsOf(got), tc.want)
			}
		})
	}
}
