package routerepair_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/ports"
)

const tenant = "t1"

var sep, oct = month.Month(202609), month.Month(202610)

type fixture struct {
	shards  *memory.ShardStore
	store   *hookedStore
	queue   *flakyQueue
	routes  *memory.RouteCache
	months  *memory.MonthState
	metrics *memory.Metrics
	svc     *routerepair.Service
	seqs    map[string]int64 // last seq written per topic
	msgIDs  int64
}

// hookedStore runs onSegments once, right after the next Segments read: a batch committing
// between a rebuild's mirror read and its write to Redis. It also shows damaged mirror
// segments in place of the real ones until a recount of their month (healingMirror).
type hookedStore struct {
	*memory.MessageStore
	mu         sync.Mutex
	onSegments func()
	damaged    map[month.Month]route.Segment
}

func (s *hookedStore) Segments(ctx context.Context, tenant, topic string) (route.Route, error) {
	r, err := s.MessageStore.Segments(ctx, tenant, topic)
	s.mu.Lock()
	hook := s.onSegments
	s.onSegments = nil
	for i := range r {
		if d, ok := s.damaged[r[i].Month]; ok {
			r[i] = d
		}
	}
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return r, err
}

// healingMirror is the memory mirror whose Recount also repairs hookedStore's damage.
type healingMirror struct {
	*memory.RouteMirror
	store *hookedStore
}

func (m *healingMirror) Recount(ctx context.Context, tenant string, mo month.Month, topic string) (route.Segment, bool, error) {
	m.store.mu.Lock()
	delete(m.store.damaged, mo)
	m.store.mu.Unlock()
	return m.RouteMirror.Recount(ctx, tenant, mo, topic)
}

// flakyQueue fails every call while down is set, like Redis being unreachable.
type flakyQueue struct {
	*memory.RepairQueue
	down bool
}

var errDown = errors.New("redis down")

func (q *flakyQueue) Add(ctx context.Context, tenant, topic string) error {
	if q.down {
		return errDown
	}
	return q.RepairQueue.Add(ctx, tenant, topic)
}

func (q *flakyQueue) Pending(ctx context.Context, tenant string, limit int) ([]ports.RepairTicket, error) {
	if q.down {
		return nil, errDown
	}
	return q.RepairQueue.Pending(ctx, tenant, limit)
}

func (q *flakyQueue) Len(ctx context.Context, tenant string) (int64, error) {
	if q.down {
		return 0, errDown
	}
	return q.RepairQueue.Len(ctx, tenant)
}

func newFixture(t *testing.T, cfg routerepair.Config) *fixture {
	t.Helper()
	clock := memory.NewClock(time.Date(2026, 10, 15, 0, 0, 0, 0, time.UTC))
	f := &fixture{
		shards: memory.NewShardStore(), queue: &flakyQueue{RepairQueue: memory.NewRepairQueue()},
		routes: memory.NewRouteCache(), months: memory.NewMonthState(clock.Now), metrics: memory.NewMetrics(),
		seqs: map[string]int64{},
	}
	f.store = &hookedStore{MessageStore: memory.NewMessageStore(f.shards), damaged: map[month.Month]route.Segment{}}
	ctx := context.Background()
	for _, m := range []month.Month{sep, oct} {
		if err := f.shards.EnsureTable(ctx, tenant, m); err != nil {
			t.Fatal(err)
		}
		if err := f.months.MarkReady(ctx, tenant, 0, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.months.Advance(ctx, tenant, 0, oct); err != nil {
		t.Fatal(err)
	}
	f.svc = routerepair.New(cfg, routerepair.Deps{
		Queue: f.queue, Store: f.store, Mirror: &healingMirror{RouteMirror: memory.NewRouteMirror(f.shards), store: f.store}, Routes: f.routes, Months: f.months,
		Metrics: f.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	return f
}

// write commits n messages of topic into m and returns the committed range as a route update.
func (f *fixture) write(t *testing.T, topic string, m month.Month, n int) ports.RouteUpdate {
	t.Helper()
	first := f.seqs[topic] + 1
	for range n {
		f.seqs[topic]++
		s := f.seqs[topic]
		f.msgIDs++
		msg := message.Message{Topic: topic, Seq: s, MsgID: f.msgIDs, From: 1, ClientMsgID: fmt.Sprint(topic, s),
			Type: "text", Status: message.StatusNormal, Version: 1, CreatedAt: m.Start().Add(time.Duration(s) * time.Minute), Month: m}
		if _, err := f.store.MessageStore.Append(context.Background(), tenant, msg, "h"); err != nil {
			t.Fatal(err)
		}
	}
	return ports.RouteUpdate{Topic: topic, Segment: route.Segment{Month: m, MinSeq: first, MaxSeq: f.seqs[topic], Count: int64(n)}}
}

// expectRoute checks that Redis routes exactly the mirror's ranges.
func (f *fixture) expectRoute(t *testing.T, topic string) {
	t.Helper()
	ctx := context.Background()
	mirror, err := f.store.MessageStore.Segments(ctx, tenant, topic)
	if err != nil {
		t.Fatal(err)
	}
	cached, found, err := f.routes.Segments(ctx, tenant, topic)
	if err != nil || !found || len(cached) != len(mirror) {
		t.Fatalf("route of %s = %+v (found %v, %v); mirror %+v", topic, cached, found, err, mirror)
	}
	for i := range mirror {
		if cached[i].Month != mirror[i].Month || cached[i].MinSeq != mirror[i].MinSeq || cached[i].MaxSeq != mirror[i].MaxSeq || cached[i].Count != mirror[i].Count {
			t.Fatalf("route of %s = %+v; mirror %+v", topic, cached, mirror)
		}
	}
}

func (f *fixture) pending(t *testing.T) bool {
	t.Helper()
	p, err := f.svc.Pending(context.Background(), tenant, oct)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestQueuedRepairRebuildsTheRouteFromTheMirror(t *testing.T) {
	f := newFixture(t, routerepair.Config{})
	ctx := context.Background()
	f.write(t, "grp_1", sep, 3)
	f.write(t, "grp_1", oct, 2) // its route update "failed": Redis has nothing
	if err := f.svc.Enqueue(ctx, tenant, "grp_1"); err != nil {
		t.Fatal(err)
	}
	if !f.pending(t) {
		t.Fatal("a queued repair must count as backlog")
	}
	n, err := f.svc.Drain(ctx, tenant)
	if err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v; want 1 repaired", n, err)
	}
	f.expectRoute(t, "grp_1")
	if f.pending(t) {
		t.Fatal("the repair is done")
	}
	if f.metrics.Count("group_message_route_rebuild_total", "ok") != 1 || f.metrics.Count("group_message_route_repair_total") != 1 ||
		f.metrics.Count("group_message_route_repair_backlog", tenant) != 0 {
		t.Fatal("metrics of the repair not recorded")
	}
	if err := f.svc.Enqueue(ctx, tenant, "not a topic"); err == nil {
		t.Fatal("an invalid topic must be refused")
	}
}

// TestRepairQueuedAgainDuringItsRebuildStays: a topic queued again while its rebuild runs was
// written after the rebuild read the mirror, so its ticket must survive the first rebuild.
func TestRepairQueuedAgainDuringItsRebuildStays(t *testing.T) {
	f := newFixture(t, routerepair.Config{})
	ctx := context.Background()
	f.write(t, "grp_1", oct, 1)
	if err := f.svc.Enqueue(ctx, tenant, "grp_1"); err != nil {
		t.Fatal(err)
	}
	f.store.onSegments = func() {
		if err := f.svc.Enqueue(ctx, tenant, "grp_1"); err != nil {
			t.Error(err)
		}
	}
	if _, err := f.svc.Drain(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	if !f.pending(t) {
		t.Fatal("the renewed ticket was dropped")
	}
	if _, err := f.svc.Drain(ctx, tenant); err != nil || f.pending(t) {
		t.Fatalf("second pass: pending=%v err=%v", f.pending(t), err)
	}
}

// TestRebuildSurvivesARacingBatch: a batch that commits after the rebuild read the mirror and
// updates Redis before the rebuild writes it would be lost by a plain read-then-replace.
func TestRebuildSurvivesARacingBatch(t *testing.T) {
	f := newFixture(t, routerepair.Config{})
	ctx := context.Background()
	if err := f.routes.Replace(ctx, tenant, "grp_1", route.Route{f.write(t, "grp_1", oct, 2).Segment}); err != nil {
		t.Fatal(err)
	}
	f.store.onSegments = func() {
		u := f.write(t, "grp_1", oct, 3)
		if err := f.routes.Apply(ctx, tenant, []ports.RouteUpdate{u}); err != nil {
			t.Error(err)
		}
	}
	rt, err := f.svc.Rebuild(ctx, tenant, "grp_1")
	if err != nil || rt.MaxSeq() != 5 {
		t.Fatalf("Rebuild = %+v, %v; want a route up to seq 5", rt, err)
	}
	f.expectRoute(t, "grp_1")
}

func TestRedisDownKeepsRepairsInProcess(t *testing.T) {
	f := newFixture(t, routerepair.Config{FallbackLimit: 1})
	ctx := context.Background()
	f.write(t, "grp_1", oct, 1)
	f.write(t, "grp_2", oct, 1)
	f.queue.down = true
	if err := f.svc.Enqueue(ctx, tenant, "grp_1"); err != nil {
		t.Fatalf("the fallback must take the repair: %v", err)
	}
	if err := f.svc.Enqueue(ctx, tenant, "grp_1"); err != nil {
		t.Fatalf("the same topic again takes no room: %v", err)
	}
	if err := f.svc.Enqueue(ctx, tenant, "grp_2"); !errors.Is(err, routerepair.ErrFallbackFull) {
		t.Fatalf("a full fallback must say so: %v", err)
	}
	if !f.pending(t) {
		t.Fatal("an in-process repair is backlog too")
	}
	// The route store itself still works (only the queue is down): the fallback drains.
	n, err := f.svc.Drain(ctx, tenant)
	if n != 1 || err == nil {
		t.Fatalf("Drain = %d, %v; want 1 repaired and the queue's error", n, err)
	}
	f.expectRoute(t, "grp_1")
	f.queue.down = false
	if f.pending(t) {
		t.Fatal("nothing is pending once the fallback drained")
	}
}

func TestRebuildTenantPagesThroughTheMirror(t *testing.T) {
	f := newFixture(t, routerepair.Config{RebuildBatch: 2})
	ctx := context.Background()
	topics := []string{"grp_1", "grp_2", "grp_3", "p2p_1_2", "p2p_1_3"}
	for _, topic := range topics {
		f.write(t, topic, sep, 2)
		f.write(t, topic, oct, 1)
	}
	if err := f.svc.EnsureRoutes(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		f.expectRoute(t, topic)
	}
	// Built once: losing one route no longer triggers a tenant-wide rebuild; queries and the
	// repair queue handle single routes.
	if err := f.routes.Replace(ctx, tenant, "grp_2", nil); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.EnsureRoutes(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := f.routes.Segments(ctx, tenant, "grp_2"); found {
		t.Fatal("EnsureRoutes rebuilt although the marker says the routes were built")
	}
	// An operator's rebuild does all of them again.
	n, err := f.svc.RebuildAll(ctx, tenant)
	if err != nil || n != len(topics) {
		t.Fatalf("RebuildAll = %d, %v; want %d", n, err, len(topics))
	}
	f.expectRoute(t, "grp_2")
	// Redis lost everything (FLUSHALL): the marker goes too, and the next pass rebuilds.
	f.queue.Forget(tenant)
	for _, topic := range topics {
		if err := f.routes.Replace(ctx, tenant, topic, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.svc.EnsureRoutes(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		f.expectRoute(t, topic)
	}
}

func TestBacklogListsQueuedAndInProcessRepairs(t *testing.T) {
	f := newFixture(t, routerepair.Config{FallbackLimit: 4})
	ctx := context.Background()
	for _, name := range []string{"grp_1", "grp_2"} {
		f.write(t, name, oct, 1)
		if err := f.svc.Enqueue(ctx, tenant, name); err != nil {
			t.Fatal(err)
		}
	}
	f.queue.down = true
	f.write(t, "grp_3", oct, 1)
	if err := f.svc.Enqueue(ctx, tenant, "grp_3"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Backlog(ctx, tenant, 10); err == nil {
		t.Fatal("a backlog read while the queue is down must say so")
	}
	f.queue.down = false
	b, err := f.svc.Backlog(ctx, tenant, 10)
	if err != nil || b.Queued != 2 || b.InProcess != 1 || len(b.Topics) != 3 || b.Topics[0] != "grp_3" {
		t.Fatalf("Backlog = %+v, %v; want 2 queued, grp_3 in process, 3 topics", b, err)
	}
	if b, err := f.svc.Backlog(ctx, tenant, 1); err != nil || !slices.Equal(b.Topics, []string{"grp_3"}) {
		t.Fatalf("Backlog(limit 1) = %+v, %v", b, err)
	}
	if n, err := f.svc.Drain(ctx, tenant); err != nil || n != 3 {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	if b, err := f.svc.Backlog(ctx, tenant, 10); err != nil || b.Queued != 0 || b.InProcess != 0 || len(b.Topics) != 0 {
		t.Fatalf("Backlog after Drain = %+v, %v", b, err)
	}
}
