package shardmanager_test

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
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/ports"
)

const tenant = "t1"

var (
	aug, sep, oct, nov, dec = month.Month(202608), month.Month(202609), month.Month(202610), month.Month(202611), month.Month(202612)
)

type fixture struct {
	clock        *memory.Clock
	shards       *failingShards
	months       *memory.MonthState
	flips        *flakyFlips
	locks        *flakyLocks
	repairs      *fakeBacklog
	compensation *memory.CompensationList
	housekeeping *recordedHousekeeping
	store        *memory.MessageStore
	metrics      *memory.Metrics
	manager      *shardmanager.Manager
	t            *testing.T
}

// failingShards fails EnsureTable for the months in fail, like a DDL the database refuses.
type failingShards struct {
	*memory.ShardStore
	mu   sync.Mutex
	fail map[month.Month]bool
}

func (s *failingShards) EnsureTable(ctx context.Context, tenant string, m month.Month) error {
	s.mu.Lock()
	fail := s.fail[m]
	s.mu.Unlock()
	if fail {
		return errors.New("DDL refused")
	}
	return s.ShardStore.EnsureTable(ctx, tenant, m)
}

func (s *failingShards) setFail(ms ...month.Month) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = map[month.Month]bool{}
	for _, m := range ms {
		s.fail[m] = true
	}
}

// flakyLocks fails every call while down is set, like Redis being unreachable.
type flakyLocks struct {
	*memory.Locks
	down bool
}

func (l *flakyLocks) Acquire(ctx context.Context, tenant, name string, ttl time.Duration) (string, bool, error) {
	if l.down {
		return "", false, errors.New("redis down")
	}
	return l.Locks.Acquire(ctx, tenant, name, ttl)
}

// flakyFlips fails the Advance to refused: the node dies, or Redis goes away, at that flip.
// unready fails the MarkReady of its month in the groups from unreadyFrom on: the master of
// those groups is away while the month is prepared.
// refusedFrom, when set, limits the refusal to the groups from it on.
type flakyFlips struct {
	*memory.MonthState
	refused     month.Month
	refusedFrom int
	unready     month.Month
	unreadyFrom int
}

func (m *flakyFlips) Advance(ctx context.Context, tenant string, group int, mo month.Month) (month.Month, error) {
	if mo == m.refused && group >= m.refusedFrom {
		return 0, errors.New("redis down")
	}
	return m.MonthState.Advance(ctx, tenant, group, mo)
}

func (m *flakyFlips) MarkReady(ctx context.Context, tenant string, group int, mo month.Month) error {
	if mo == m.unready && group >= m.unreadyFrom {
		return errors.New("redis master down")
	}
	return m.MonthState.MarkReady(ctx, tenant, group, mo)
}

// groups is how many slot groups the fixture's month state keeps, as the Redis one keeps 64.
const groups = 4

// recordedHousekeeping remembers how many rows each purge deleted.
type recordedHousekeeping struct {
	*memory.Housekeeping
	purges []int64
}

func (h *recordedHousekeeping) PurgeExpiredDedup(ctx context.Context, tenant string, now time.Time, limit int) (int64, error) {
	n, err := h.Housekeeping.PurgeExpiredDedup(ctx, tenant, now, limit)
	h.purges = append(h.purges, n)
	return n, err
}

type fakeBacklog struct {
	pending bool
	err     error
}

func (b *fakeBacklog) Pending(context.Context, string, month.Month) (bool, error) {
	return b.pending, b.err
}

func newFixture(t *testing.T, now time.Time) *fixture {
	t.Helper()
	f := &fixture{clock: memory.NewClock(now), metrics: memory.NewMetrics(), repairs: &fakeBacklog{}, compensation: memory.NewCompensationList()}
	mem := memory.NewShardStore()
	f.shards = &failingShards{ShardStore: mem}
	f.store = memory.NewMessageStore(mem)
	f.housekeeping = &recordedHousekeeping{Housekeeping: memory.NewHousekeeping(mem)}
	f.months = memory.NewGroupedMonthState(f.clock.Now, groups)
	f.flips = &flakyFlips{MonthState: f.months}
	f.locks = &flakyLocks{Locks: memory.NewLocks(f.clock.Now)}
	f.manager = shardmanager.New(shardmanager.Config{SealingDays: 7, DedupPurgeBatch: 2, DedupPurgeBatches: 3}, shardmanager.Deps{
		Store: f.shards, Months: f.flips, Locks: f.locks, Repairs: f.repairs, Compensation: f.compensation,
		Housekeeping: f.housekeeping, Metrics: f.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Sleep: f.clock.Sleep,
	})
	return f
}

func (f *fixture) ensure(t *testing.T) {
	t.Helper()
	if err := f.manager.Ensure(context.Background(), tenant); err != nil {
		t.Fatalf("Ensure at %s: %v", f.clock.Now(), err)
	}
}

func (f *fixture) state(t *testing.T, m month.Month) shard.State {
	t.Helper()
	infos, err := f.shards.Catalog(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Month == m {
			return in.State
		}
	}
	return ""
}

// walk moves m from its state through the given states.
func (f *fixture) walk(t *testing.T, m month.Month, states ...shard.State) {
	t.Helper()
	from := f.state(t, m)
	for _, to := range states {
		if err := f.shards.SetState(context.Background(), tenant, m, from, to); err != nil {
			t.Fatal(err)
		}
		from = to
	}
}

func (f *fixture) active(t *testing.T) month.Month {
	t.Helper()
	m, _, err := f.months.Active(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func at(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, time.UTC) }

// TestLifecycleTransitions walks September through one Ensure in October (seed 000 §4, §10):
// the late-write window ends 7 days after the month, and only then, with no backlog, may a
// sealing month be sealed.
func TestLifecycleTransitions(t *testing.T) {
	windowEnds := at(2026, 10, 8, 0)
	tests := []struct {
		name         string
		now          time.Time
		from         []shard.State // how September got to its state, from prepared
		repairs      bool
		backlogErr   error
		compensation month.Month // month of a compensation entry; 0 for none
		want         shard.State
		wantErr      bool
	}{
		{name: "writable month is sealing once the month turned", now: at(2026, 10, 1, 1), from: []shard.State{shard.Writable}, want: shard.Sealing},
		{name: "prepared month never used is sealing too", now: at(2026, 10, 1, 1), want: shard.Sealing},
		{name: "sealing inside the late-write window stays", now: windowEnds.Add(-time.Second), from: []shard.State{shard.Writable, shard.Sealing}, want: shard.Sealing},
		{name: "sealing after the window without backlog is sealed", now: windowEnds, from: []shard.State{shard.Writable, shard.Sealing}, want: shard.Sealed},
		{name: "pending route repairs hold sealing back", now: windowEnds, from: []shard.State{shard.Writable, shard.Sealing}, repairs: true, want: shard.Sealing},
		{name: "compensation entries of the month hold sealing back", now: windowEnds, from: []shard.State{shard.Writable, shard.Sealing}, compensation: sep, want: shard.Sealing},
		{name: "compensation entries of another month do not", now: windowEnds, from: []shard.State{shard.Writable, shard.Sealing}, compensation: aug, want: shard.Sealed},
		{name: "an unreadable backlog holds sealing back", now: windowEnds, from: []shard.State{shard.Writable, shard.Sealing}, backlogErr: errors.New("redis down"), want: shard.Sealing, wantErr: true},
		{name: "sealed is never archived by the manager", now: windowEnds.AddDate(0, 0, 20), from: []shard.State{shard.Writable, shard.Sealing, shard.Sealed}, want: shard.Sealed},
		{name: "archived stays archived", now: windowEnds, from: []shard.State{shard.Writable, shard.Sealing, shard.Sealed, shard.Archived}, want: shard.Archived},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, at(2026, 9, 15, 0))
			ctx := context.Background()
			if err := f.shards.EnsureTable(ctx, tenant, sep); err != nil {
				t.Fatal(err)
			}
			f.walk(t, sep, tc.from...)
			f.repairs.pending, f.repairs.err = tc.repairs, tc.backlogErr
			if tc.compensation != 0 {
				m := message.Message{Topic: "grp_1", Seq: 1, MsgID: 9, Month: tc.compensation}
				if _, err := f.compensation.Push(ctx, tenant, ports.Compensation{Message: m}); err != nil {
					t.Fatal(err)
				}
			}
			f.clock.Set(tc.now)
			err := f.manager.Ensure(ctx, tenant)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Ensure: %v, want error %v", err, tc.wantErr)
			}
			if got := f.state(t, sep); got != tc.want {
				t.Fatalf("September is %s, want %s", got, tc.want)
			}
			if got := f.state(t, oct); got != shard.Writable {
				t.Fatalf("the active month is %s, want writable", got)
			}
			if got := f.state(t, nov); got != shard.Prepared {
				t.Fatalf("next month is %s, want prepared", got)
			}
		})
	}
}

// TestFailedTableKeepsTheActiveMonth: a month whose DDL failed is never switched to (seed 000
// §4.7); the failure is counted for the alert and the gauges show it.
func TestFailedTableKeepsTheActiveMonth(t *testing.T) {
	f := newFixture(t, at(2026, 10, 15, 0))
	f.shards.setFail(nov, dec)
	if err := f.manager.Ensure(context.Background(), tenant); err == nil {
		t.Fatal("Ensure must report the failed DDL")
	}
	if got := f.active(t); got != oct {
		t.Fatalf("active month %s, want %s", got, oct)
	}
	if f.metrics.Count("group_message_shard_missing_total") != 1 || f.metrics.Count("group_message_shard_ready", tenant, "next") != 0 {
		t.Fatalf("missing table not reported: missing=%v next_ready=%v",
			f.metrics.Count("group_message_shard_missing_total"), f.metrics.Count("group_message_shard_ready", tenant, "next"))
	}

	f.clock.Set(at(2026, 11, 1, 0))
	if err := f.manager.Ensure(context.Background(), tenant); err == nil {
		t.Fatal("Ensure must report the failed DDL")
	}
	if got := f.active(t); got != oct {
		t.Fatalf("switched to %s although its table failed; want %s", got, oct)
	}
	if got := f.state(t, oct); got != shard.Writable {
		t.Fatalf("the old active month must stay writable, it is %s", got)
	}
	if f.metrics.Count("group_message_shard_ready", tenant, "current") != 0 || f.metrics.Count("group_message_shard_ready", tenant, "active") != 1 {
		t.Fatal("gauges must show the current month missing and the active one writable")
	}

	f.shards.setFail()
	f.ensure(t)
	if got := f.active(t); got != nov {
		t.Fatalf("after the DDL works the active month is %s, want %s", got, nov)
	}
	if got := f.state(t, oct); got != shard.Sealing {
		t.Fatalf("October is %s, want sealing", got)
	}
	for _, which := range []string{"active", "current", "next"} {
		if f.metrics.Count("group_message_shard_ready", tenant, which) != 1 {
			t.Fatalf("shard_ready{%s} = 0 after recovery", which)
		}
	}
}

// TestOldMonthSealsOnlyOnceEveryGroupSwitched: the month turns while some slot groups cannot
// learn that the new month is ready (the master of their slots is away): those groups go on
// handing out the month before, so it stays writable and the new one prepared until every
// group has switched; then the month before is sealing (DESIGN §7.2).
func TestOldMonthSealsOnlyOnceEveryGroupSwitched(t *testing.T) {
	f := newFixture(t, at(2026, 10, 15, 0))
	f.flips.unready, f.flips.unreadyFrom = nov, groups/2
	if err := f.manager.Ensure(t.Context(), tenant); err == nil {
		t.Fatal("Ensure must report the groups it could not prepare")
	}
	f.clock.Set(at(2026, 11, 1, 0))
	if err := f.manager.Ensure(t.Context(), tenant); err == nil {
		t.Fatal("Ensure must report the groups it could not prepare")
	}
	for g := range groups {
		want := nov
		if g >= groups/2 {
			want = oct
		}
		if got, err := f.months.Advance(t.Context(), tenant, g, oct); err != nil || got != want {
			t.Fatalf("group %d is at %s, %v; want %s", g, got, err, want)
		}
	}
	if got := f.active(t); got != nov {
		t.Fatalf("Active = %s, want the newest group's %s", got, nov)
	}
	f.wantStates(t, "while groups still hand October out", map[month.Month]shard.State{oct: shard.Writable, nov: shard.Prepared})

	f.flips.unready = 0
	f.ensure(t)
	f.wantStates(t, "once every group switched", map[month.Month]shard.State{oct: shard.Sealing, nov: shard.Writable})
}

// wantStates checks the catalog states of the months in want.
func (f *fixture) wantStates(t *testing.T, when string, want map[month.Month]shard.State) {
	t.Helper()
	for m, state := range want {
		if got := f.state(t, m); got != state {
			t.Fatalf("%s: %s is %s; want %s", when, m, got, state)
		}
	}
}

// TestSwitchHalfwayRaisesThisProcessFloor: an early switch that fails halfway across the
// slot groups (a master goes away after the first groups switched) leaves this process's
// month floor at the month the first groups hold, so its sends raise the groups the switch did
// not reach instead of allocating behind it (seed 000 §3.3; DESIGN §7.2).
func TestSwitchHalfwayRaisesThisProcessFloor(t *testing.T) {
	f := newFixture(t, at(2026, 10, 15, 0))
	f.ensure(t)
	f.flips.refused, f.flips.refusedFrom = nov, groups/2
	if _, err := f.manager.Advance(t.Context(), tenant, nov); err == nil {
		t.Fatal("Advance succeeded although half the groups refused it")
	}
	if got := f.manager.Floors().Of(tenant); got != nov {
		t.Fatalf("floor %s after the first groups switched to %s", got, nov)
	}
}

// TestMonthSwitchTakesTheLock: the switch runs on one node at a time (seed 000 §4.3).
func TestMonthSwitchTakesTheLock(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, at(2026, 10, 31, 23))
	f.ensure(t)
	f.clock.Set(at(2026, 11, 1, 0))

	token, ok, err := f.locks.Acquire(ctx, tenant, "shard_switch", time.Minute)
	if err != nil || !ok {
		t.Fatalf("another node's lock: %v %v", ok, err)
	}
	f.ensure(t)
	if got := f.active(t); got != oct {
		t.Fatalf("switched to %s while another node held the lock", got)
	}
	if got := f.state(t, dec.Next()); got != shard.Prepared {
		t.Fatalf("tables are prepared on every node, whoever switches: %s", got)
	}

	if err := f.locks.Release(ctx, tenant, "shard_switch", token); err != nil {
		t.Fatal(err)
	}
	f.ensure(t)
	if got := f.active(t); got != nov {
		t.Fatalf("active month %s after the lock was free, want %s", got, nov)
	}
	if _, ok, _ := f.locks.Acquire(ctx, tenant, "shard_switch", time.Minute); !ok {
		t.Fatal("Ensure must release the lock it took")
	}

	f.locks.down = true
	if err := f.manager.Ensure(ctx, tenant); err == nil {
		t.Fatal("Ensure must fail when the lock cannot be read")
	}
}

// TestExpiredLockIsTakenOver: a holder that died delays the switch only until its lease expires.
func TestExpiredLockIsTakenOver(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, at(2026, 10, 31, 23))
	f.ensure(t)
	if _, ok, _ := f.locks.Acquire(ctx, tenant, "shard_switch", time.Minute); !ok {
		t.Fatal("lock")
	}
	f.clock.Set(at(2026, 11, 1, 0).Add(2 * time.Minute))
	f.ensure(t)
	if got := f.active(t); got != nov {
		t.Fatalf("active month %s, want %s once the dead holder's lease expired", got, nov)
	}
}

func TestArchive(t *testing.T) {
	tests := []struct {
		name  string
		month month.Month
		from  []shard.State
		want  apperr.Code
		state shard.State
	}{
		{name: "sealed month is archived", month: sep, from: []shard.State{shard.Writable, shard.Sealing, shard.Sealed}, want: apperr.OK, state: shard.Archived},
		{name: "archiving again is a no-op", month: sep, from: []shard.State{shard.Writable, shard.Sealing, shard.Sealed, shard.Archived}, want: apperr.OK, state: shard.Archived},
		{name: "sealing month is refused", month: sep, from: []shard.State{shard.Writable, shard.Sealing}, want: apperr.Conflict, state: shard.Sealing},
		{name: "writable month is refused", month: sep, from: []shard.State{shard.Writable}, want: apperr.Conflict, state: shard.Writable},
		{name: "month not in the catalog", month: aug, want: apperr.NotFound},
		{name: "invalid month", month: 202613, want: apperr.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, at(2026, 12, 20, 0))
			ctx := context.Background()
			if err := f.shards.EnsureTable(ctx, tenant, sep); err != nil {
				t.Fatal(err)
			}
			f.walk(t, sep, tc.from...)
			err := f.manager.Archive(ctx, tenant, tc.month)
			if apperr.CodeOf(err) != tc.want {
				t.Fatalf("Archive: %v, want code %d", err, tc.want)
			}
			if tc.state != "" && f.state(t, sep) != tc.state {
				t.Fatalf("September is %s, want %s", f.state(t, sep), tc.state)
			}
		})
	}
}

// TestUpkeepPurgesExpiredDedupInBatches: at most DedupPurgeBatches deletes of DedupPurgeBatch
// rows per pass (the fixture: 3 of 2), the rest on the next pass (seed 000 §3.5).
func TestUpkeepPurgesExpiredDedupInBatches(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	f := newFixture(t, now)
	f.ensure(t)
	cur := month.Of(now)
	for i := range 7 {
		m := message.Message{Topic: "grp_1", Seq: int64(i + 1), MsgID: int64(100 + i), From: 1, ClientMsgID: fmt.Sprint("c", i),
			Type: "text", Status: message.StatusNormal, Version: 1, CreatedAt: now, Month: cur}
		if _, err := f.store.Append(ctx, tenant, m, "h"); err != nil {
			t.Fatal(err)
		}
	}
	passes := []struct {
		now  time.Time
		want []int64
	}{
		{now: now, want: []int64{0}},                                        // nothing expired yet
		{now: now.Add(memory.DedupTTL + time.Hour), want: []int64{2, 2, 2}}, // the cap of one pass
		{now: now.Add(memory.DedupTTL + 2*time.Hour), want: []int64{1}},     // the rest
		{now: now.Add(memory.DedupTTL + 3*time.Hour), want: []int64{0}},     // nothing left
	}
	for i, p := range passes {
		f.housekeeping.purges = nil
		f.clock.Set(p.now)
		f.ensure(t)
		if !slices.Equal(f.housekeeping.purges, p.want) {
			t.Fatalf("pass %d deleted %v, want %v", i, f.housekeeping.purges, p.want)
		}
	}
}

func TestCompensationListing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, at(2026, 10, 15, 0))
	for i := range 3 {
		m := message.Message{Topic: "grp_1", Seq: int64(i + 1), MsgID: int64(i + 1), Month: sep}
		if _, err := f.compensation.Push(ctx, tenant, ports.Compensation{Message: m, Reason: "sealed"}); err != nil {
			t.Fatal(err)
		}
	}
	entries, total, err := f.manager.Compensation(ctx, tenant, 2)
	if err != nil || total != 3 || len(entries) != 2 || entries[0].Message.MsgID != 1 {
		t.Fatalf("Compensation = %+v, %d, %v; want the oldest 2 of 3", entries, total, err)
	}
	f.ensure(t)
	if got := f.metrics.Count("group_message_compensation_backlog", tenant); got != 3 {
		t.Fatalf("compensation backlog gauge %v, want 3", got)
	}
}

// TestActiveMonthSurvivesRedisLoss: after an early switch, Redis losing the active month (all of
// it, or the last write of it) is repaired forward from the catalog, by every path, and never
// moves back (seed 000 §3.3; DESIGN §11; issue 19).
func TestActiveMonthSurvivesRedisLoss(t *testing.T) {
	cases := []struct {
		name   string
		lose   func(f *fixture)
		repair func(t *testing.T, f *fixture) error
	}{
		{"flushall, shard manager pass", func(f *fixture) { f.months.Forget(tenant) },
			func(t *testing.T, f *fixture) error { return f.manager.Ensure(t.Context(), tenant) }},
		{"flushall, pass while another node holds the lock", func(f *fixture) { f.months.Forget(tenant); f.holdLock(f.t) },
			func(t *testing.T, f *fixture) error { return f.manager.Ensure(t.Context(), tenant) }},
		{"flushall, reconcile", func(f *fixture) { f.months.Forget(tenant) },
			func(t *testing.T, f *fixture) error { return f.manager.Reconcile(t.Context(), tenant) }},
		{"stale replica, reconcile", func(f *fixture) { f.months.ForceActive(tenant, oct) },
			func(t *testing.T, f *fixture) error { return f.manager.Reconcile(t.Context(), tenant) }},
		{"stale replica, shard manager pass", func(f *fixture) { f.months.ForceActive(tenant, oct) },
			func(t *testing.T, f *fixture) error { return f.manager.Ensure(t.Context(), tenant) }},
		{"flushall, operator asks for the month before", func(f *fixture) { f.months.Forget(tenant) },
			func(t *testing.T, f *fixture) error {
				if _, err := f.manager.Advance(t.Context(), tenant, oct); apperr.CodeOf(err) != apperr.InvalidArgument {
					t.Fatalf("Advance back to %s after the loss: %v, want 40001", oct, err)
				}
				return nil
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, at(2026, 10, 15, 0))
			f.t = t
			f.ensure(t)
			if got, err := f.manager.Advance(t.Context(), tenant, dec); err != nil || got != dec {
				t.Fatalf("early Advance(%s) = %s, %v", dec, got, err)
			}
			if got := f.state(t, dec); got != shard.Writable {
				t.Fatalf("%s is %s after the early switch, want writable", dec, got)
			}
			c.lose(f)
			if err := c.repair(t, f); err != nil {
				t.Fatal(err)
			}
			if got := f.active(t); got != dec {
				t.Fatalf("active month %s after the loss and repair, want %s", got, dec)
			}
			for _, m := range []month.Month{oct, nov} {
				if got := f.state(t, m); got != shard.Sealing {
					t.Fatalf("%s is %s, want sealing", m, got)
				}
			}
		})
	}
}

// unreachableCatalog is the fixture's shard store while MySQL is down: the catalog cannot be
// read and no table prepared.
type unreachableCatalog struct{ ports.ShardStore }

func (unreachableCatalog) Catalog(context.Context, string) ([]shard.Info, error) {
	return nil, errors.New("mysql down")
}

func (unreachableCatalog) EnsureTable(context.Context, string, month.Month) error {
	return errors.New("mysql down")
}

// TestAPassMakesTheActiveMonthRedisHoldsItsFloor: a process's shard pass that finds December
// active in Redis makes December its floor, even with the catalog unreadable (MySQL down), so
// a failover that then rolls Redis back before the switch hands this process no allocation in
// November (DESIGN §11). Without it, the process allocated in November, the write refused the
// row as behind (shard.Superseding) and the seq was a hole: simulator seeds 327 and 354 at
// commit fc55f69 ("active month moved back").
func TestAPassMakesTheActiveMonthRedisHoldsItsFloor(t *testing.T) {
	f := newFixture(t, at(2026, 10, 15, 0))
	f.ensure(t)
	if got, err := f.manager.Advance(t.Context(), tenant, dec); err != nil || got != dec {
		t.Fatalf("early Advance(%s) = %s, %v", dec, got, err)
	}
	// Another process, just started: it has seen nothing of the switch.
	fresh := shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{
		Store: unreachableCatalog{f.shards}, Months: f.months, Locks: f.locks, Metrics: f.metrics,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Sleep: f.clock.Sleep,
	})
	if err := fresh.Ensure(t.Context(), tenant); err == nil {
		t.Fatal("a pass with MySQL down reported no error")
	}
	if got := fresh.Floors().Of(tenant); got != dec {
		t.Fatalf("floor after a pass that found %s active in Redis: %s", dec, got)
	}
}

func (f *fixture) holdLock(t *testing.T) {
	t.Helper()
	if _, ok, err := f.locks.Acquire(context.Background(), tenant, "shard_switch", time.Minute); err != nil || !ok {
		t.Fatalf("another node's lock: %v %v", ok, err)
	}
}

// TestEarlySwitchRefusesTheMonthBeforeWhateverRedisLoses: once an early switch to November
// is in Redis, through the advance or through a pass raising Redis from the catalog after an
// advance that failed or died before it recorded the switch, a Redis that hands out October
// again (a failover that lost the flip) gets no new October row written after it: the write
// refuses it as behind, and the send allocates again in November.
func TestEarlySwitchRefusesTheMonthBeforeWhateverRedisLoses(t *testing.T) {
	cases := []struct {
		name  string
		reach func(t *testing.T, f *fixture)
	}{
		{"Redis loses the flip", func(t *testing.T, f *fixture) {
			if got, err := f.manager.Advance(t.Context(), tenant, nov); err != nil || got != nov {
				t.Fatalf("Advance(%s) = %s, %v", nov, got, err)
			}
		}},
		{"the flip fails, the next pass raises Redis from the catalog", func(t *testing.T, f *fixture) {
			f.flips.refused = nov
			if _, err := f.manager.Advance(t.Context(), tenant, nov); err == nil {
				t.Fatal("Advance succeeded without its flip")
			}
			f.flips.refused = 0
			f.ensure(t)
			if got := f.active(t); got != nov {
				t.Fatalf("active month %s after the pass, want %s", got, nov)
			}
		}},
		{"the advance died before recording; the catalog raises Redis", func(t *testing.T, f *fixture) {
			f.walk(t, nov, shard.Writable)
			if err := f.manager.Reconcile(t.Context(), tenant); err != nil {
				t.Fatal(err)
			}
			if got := f.active(t); got != nov {
				t.Fatalf("active month %s after the raise, want %s", got, nov)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, at(2026, 10, 15, 0))
			f.ensure(t)
			c.reach(t, f)
			f.clock.Advance(time.Millisecond)
			f.months.ForceActive(tenant, oct) // Redis back before the switch
			m := message.Message{Topic: "grp_1", Seq: 1, MsgID: 1, From: 2, ClientMsgID: "c1", Type: "text",
				Content: []byte(`{"text":"x"}`), Month: oct, CreatedAt: f.clock.Now()}
			_, err := f.store.AppendFresh(t.Context(), tenant, m, "h", f.clock.Now())
			if behind := (*shard.BehindError)(nil); !errors.As(err, &behind) || behind.Newer != nov {
				t.Fatalf("an October row allocated after the switch: %v, want behind %s", err, nov)
			}
		})
	}
}

// TestEarlySwitchLeavesNoWindowWhereverTheAdvanceDies: an advance whose node dies before any
// one of its port calls, followed by a Redis failover that loses everything the advance told
// Redis, never lets an October row allocated after Redis would have handed out November be
// stored: the write refuses it as behind. It is the schedule the simulator found at seed 28 of
// 48 (DESIGN §7.1): the node died between its flip and its record of the switch's instant, Redis
// lost the flip, and a process that never saw November went on storing October.
func TestEarlySwitchLeavesNoWindowWhereverTheAdvanceDies(t *testing.T) {
	for die := 1; ; die++ {
		f := newFixture(t, at(2026, 10, 15, 0))
		f.ensure(t)
		failover := f.months.Snapshot()
		node := &dying{at: die}
		advancing := shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{
			Store: dyingShards{ShardStore: f.shards, node: node}, Months: dyingMonths{MonthState: f.months, node: node},
			Metrics: f.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Sleep: f.clock.Sleep,
		})
		_, advanceErr := advancing.Advance(t.Context(), tenant, nov)
		// Past any switch the advance scheduled: what a Redis that survived would hand out now.
		f.clock.Advance(time.Second)
		var survived month.Month
		for g := range groups {
			got, err := f.months.Advance(t.Context(), tenant, g, oct)
			if err != nil {
				t.Fatal(err)
			}
			survived = max(survived, got)
		}
		failover()
		f.clock.Advance(time.Millisecond)
		m := message.Message{Topic: "grp_1", Seq: 1, MsgID: 1, From: 2, ClientMsgID: "c1", Type: "text",
			Content: []byte(`{"text":"x"}`), Month: oct, CreatedAt: f.clock.Now()}
		_, err := f.store.AppendFresh(t.Context(), tenant, m, "h", f.clock.Now())
		if behind := (*shard.BehindError)(nil); survived == nov && (!errors.As(err, &behind) || behind.Newer != nov) {
			t.Fatalf("node died before port call %d of the advance (%v); a group had switched to %s, lost it, and an October row allocated after: %v, want behind %s",
				die, advanceErr, nov, err, nov)
		}
		if advanceErr == nil {
			return // it lived through every call
		}
	}
}

// dying is a node that dies before its port call number at (counted from 1): that call and
// every one after fail.
type dying struct{ calls, at int }

var errDied = errors.New("node died")

func (d *dying) call() error {
	d.calls++
	if d.calls >= d.at {
		return errDied
	}
	return nil
}

// then runs fn unless the node died before it.
func (d *dying) then(fn func() error) error {
	if err := d.call(); err != nil {
		return err
	}
	return fn()
}

// through runs fn unless the node died before it.
func through[T any](d *dying, fn func() (T, error)) (T, error) {
	if err := d.call(); err != nil {
		var zero T
		return zero, err
	}
	return fn()
}

type dyingMonths struct {
	ports.MonthState
	node *dying
}

func (m dyingMonths) MarkReady(ctx context.Context, tenant string, group int, mo month.Month) error {
	return m.node.then(func() error { return m.MonthState.MarkReady(ctx, tenant, group, mo) })
}

func (m dyingMonths) Active(ctx context.Context, tenant string) (month.Month, bool, error) {
	if err := m.node.call(); err != nil {
		return 0, false, err
	}
	return m.MonthState.Active(ctx, tenant)
}

func (m dyingMonths) Advance(ctx context.Context, tenant string, group int, mo month.Month) (month.Month, error) {
	return through(m.node, func() (month.Month, error) { return m.MonthState.Advance(ctx, tenant, group, mo) })
}

func (m dyingMonths) SwitchAt(ctx context.Context, tenant string, group int, mo month.Month, at time.Time) (month.Month, error) {
	return through(m.node, func() (month.Month, error) { return m.MonthState.SwitchAt(ctx, tenant, group, mo, at) })
}

func (m dyingMonths) Now(ctx context.Context) (time.Time, error) {
	return through(m.node, func() (time.Time, error) { return m.MonthState.Now(ctx) })
}

type dyingShards struct {
	ports.ShardStore
	node *dying
}

func (s dyingShards) EnsureTable(ctx context.Context, tenant string, mo month.Month) error {
	return s.node.then(func() error { return s.ShardStore.EnsureTable(ctx, tenant, mo) })
}

func (s dyingShards) Catalog(ctx context.Context, tenant string) ([]shard.Info, error) {
	return through(s.node, func() ([]shard.Info, error) { return s.ShardStore.Catalog(ctx, tenant) })
}

func (s dyingShards) SetState(ctx context.Context, tenant string, mo month.Month, from, to shard.State) error {
	return s.node.then(func() error { return s.ShardStore.SetState(ctx, tenant, mo, from, to) })
}

func (s dyingShards) RecordSwitch(ctx context.Context, tenant string, mo month.Month, at time.Time) error {
	return s.node.then(func() error { return s.ShardStore.RecordSwitch(ctx, tenant, mo, at) })
}
