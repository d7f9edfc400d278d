// Package shardmanager keeps each tenant's month tables ready and moves them through their
// lifecycle (seed 000 §4, §10; DESIGN §7). DDL runs here, never inside a write transaction.
package shardmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/kit/periodic"
	"github.com/imdhq/imd/ports"
)

// Config of the lifecycle.
type Config struct {
	// SealingDays is how long a past month keeps accepting late writes (seed 000 §4.5).
	SealingDays int
	// AheadMonths is how many future months get tables (seed 000 §4.1: two).
	AheadMonths int
	// LockTTL bounds how long one node holds the month-switch lock; a node that dies holding it
	// delays the next switch by at most this much.
	LockTTL time.Duration
	// DedupPurgeBatch is how many expired dedup records one DELETE removes (seed 000 §3.5).
	DedupPurgeBatch int
	// DedupPurgeBatches caps the DELETEs of one pass, so a large backlog drains over several
	// passes instead of holding the lock.
	DedupPurgeBatches int
	// SwitchLead is how far ahead of Redis TIME an early switch is scheduled at least
	// (Advance): the catalog records the switch's instant and Redis learns it within the lead,
	// so the switch takes effect at exactly the recorded instant. The lead is twice what the
	// advance's own catalog work took before, when that is longer. An Advance returns after it.
	SwitchLead time.Duration
}

// Defaults of Config.
const (
	DefaultAheadMonths       = 2
	DefaultLockTTL           = 30 * time.Second
	DefaultDedupPurgeBatch   = 1000
	DefaultDedupPurgeBatches = 10
	// DefaultSwitchLead covers one catalog UPDATE and one Redis script with room to spare; a
	// slower catalog only costs the sends allocated in the month before in between a second
	// allocation in the new month (DESIGN §7.1).
	DefaultSwitchLead = 500 * time.Millisecond
)

// Backlog reports whether work that may still concern month m of a tenant is pending; a
// sealing month is sealed only when none is (seed 000 §4.6).
type Backlog interface {
	Pending(ctx context.Context, tenant string, m month.Month) (bool, error)
}

// Deps are the ports the manager uses. Locks, Repairs, Compensation and Housekeeping may be
// nil where a test or a single process has no use for them: no lock is taken, no backlog
// holds sealing back, no upkeep runs.
type Deps struct {
	Store        ports.ShardStore
	Months       ports.MonthState
	Locks        ports.Locks
	Repairs      Backlog
	Compensation ports.CompensationList
	Housekeeping ports.ShardHousekeeping
	Metrics      ports.Metrics
	Log          *slog.Logger
	// Floors learns the catalog's newest writable month of every reconcile and advance, so this
	// process's sends raise a Redis that fell behind it (send.Deps.Floors); nil: New makes one.
	Floors *month.Floors
	// Sleep waits d or until ctx ends (Advance waits for its switch's instant); nil:
	// periodic.Sleep.
	// A simulated clock moves itself instead.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Manager runs the shard lifecycle.
type Manager struct {
	cfg Config
	d   Deps
}

// New returns a manager.
func New(cfg Config, d Deps) *Manager {
	if cfg.AheadMonths <= 0 {
		cfg.AheadMonths = DefaultAheadMonths
	}
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = DefaultLockTTL
	}
	if d.Floors == nil {
		d.Floors = new(month.Floors)
	}
	if cfg.DedupPurgeBatch <= 0 {
		cfg.DedupPurgeBatch = DefaultDedupPurgeBatch
	}
	if cfg.DedupPurgeBatches <= 0 {
		cfg.DedupPurgeBatches = DefaultDedupPurgeBatches
	}
	if cfg.SwitchLead <= 0 {
		cfg.SwitchLead = DefaultSwitchLead
	}
	if d.Sleep == nil {
		d.Sleep = periodic.Sleep
	}
	return &Manager{cfg: cfg, d: d}
}

// switchLock is the lock name of the month switch and the state changes and upkeep after it.
const switchLock = "shard_switch"

// Ensure prepares last, current and the next months, switches the active month when the
// calendar month turned (only to a ready table), advances states and does the upkeep. It is
// safe to run on every node at any time: the table DDL is idempotent and runs everywhere, so
// each node learns the tables; the switch and what follows run under a Redis lock on one node
// at a time (seed 000 §4.3), and a node that finds the lock taken leaves them to its holder.
func (m *Manager) Ensure(ctx context.Context, tenant string) error {
	now, err := m.d.Months.Now(ctx)
	if err != nil {
		return fmt.Errorf("redis time: %w", err)
	}
	cur := month.Of(now)
	var failed error
	for i := -1; i <= m.cfg.AheadMonths; i++ {
		if err := m.prepare(ctx, tenant, cur.Add(i)); err != nil {
			failed = errors.Join(failed, err)
		}
	}
	if failed != nil {
		// A month whose table failed is not ready, so the seq script never switches to it.
		m.d.Metrics.Inc("group_message_shard_missing_total")
		m.d.Log.ErrorContext(ctx, "preparing month tables failed", "tenant", tenant, "err", failed)
	}
	// Outside the lock: the repair is forward-only and atomic in Redis, so it is safe on every
	// node at once, and a node that finds the lock taken still heals a Redis that lost the month.
	_, repairErr := m.reconcile(ctx, tenant, now)
	err = m.exclusively(ctx, tenant, func(ctx context.Context) error {
		switched, _, err := m.advance(ctx, tenant, cur)
		if err != nil {
			return fmt.Errorf("advance active month of %s: %w", tenant, err)
		}
		return errors.Join(m.settle(ctx, tenant, switched, now), m.upkeep(ctx, tenant, now))
	})
	m.report(ctx, tenant, cur)
	return errors.Join(failed, repairErr, err)
}

// Reconcile repairs Redis' active month forward to what the MySQL catalog says it is at least
// (seed 000 §3.3 "旧节点不能回拨"; DESIGN §11): Redis may have lost it (FLUSHALL) or be behind
// (a failover to a replica that missed the switch). The send path calls it when a write finds
// its allocation colliding with a later month, the shard manager on every pass.
// Floors is what the manager learned of each tenant's newest writable month, for the send path.
func (m *Manager) Floors() *month.Floors { return m.d.Floors }

func (m *Manager) Reconcile(ctx context.Context, tenant string) error {
	_, err := m.reconcile(ctx, tenant, time.Time{})
	return err
}

// reconcile raises every slot group's active_month to the newest writable month of the catalog
// (a group that lost its copy is re-seeded from it, never moved back) and returns the newest
// active month of the groups, the zero Month when neither has one yet. now is Redis TIME read
// earlier in the caller's pass, zero when it has none.
func (m *Manager) reconcile(ctx context.Context, tenant string, now time.Time) (month.Month, error) {
	infos, err := m.d.Store.Catalog(ctx, tenant)
	if err != nil {
		return 0, fmt.Errorf("catalog of %s: %w", tenant, err)
	}
	floor := shard.NewestWritable(infos)
	m.d.Floors.Raise(tenant, floor)
	if floor == 0 {
		active, _, err := m.d.Months.Active(ctx, tenant)
		if err != nil {
			return 0, fmt.Errorf("active month of %s: %w", tenant, err)
		}
		return active, nil
	}
	// The ready set is Redis state too: the floor's table exists, so it is ready.
	if err := m.markReady(ctx, tenant, floor); err != nil {
		return 0, err
	}
	unrecorded, err := m.switchUnrecorded(ctx, infos, floor, now)
	if err != nil {
		return 0, err
	}
	switched, active, err := m.advance(ctx, tenant, floor)
	if err != nil {
		return 0, fmt.Errorf("advance active month of %s to %s: %w", tenant, floor, err)
	}
	if active != floor {
		m.d.Log.InfoContext(ctx, "active month ahead of the catalog floor", "tenant", tenant, "month", active.String(), "floor", floor.String())
	}
	// switched == floor: some group holds the floor, not ahead of it.
	if unrecorded && switched == floor {
		// Read after the raise, as Advance reads it after its flip: a send allocated in the
		// month before until then was in flight across it, not behind it.
		raised, err := m.d.Months.Now(ctx)
		if err != nil {
			return 0, fmt.Errorf("redis time: %w", err)
		}
		if err := m.d.Store.RecordSwitch(ctx, tenant, floor, raised); err != nil {
			return 0, fmt.Errorf("record the raise of %s to %s: %w", tenant, floor, err)
		}
	}
	return active, nil
}

// switchUnrecorded reports whether the writable month floor is active before its first
// instant with no instant recorded for it. An advance records the instant before the month
// is writable (scheduleSwitch), so only a catalog written before it did (DESIGN §7.1), by an
// advance that died between its flip and its record, holds such a month. Raising Redis to it
// then records one, or a Redis rolled back once more could hand out the month before and its
// writes would not be refused. now is read only when the catalog cannot tell.
func (m *Manager) switchUnrecorded(ctx context.Context, infos []shard.Info, floor month.Month, now time.Time) (bool, error) {
	i := slices.IndexFunc(infos, func(in shard.Info) bool { return in.Month == floor })
	if i >= 0 && !infos[i].ActiveSince.IsZero() && infos[i].ActiveSince.Before(floor.Start()) {
		return false, nil // an early switch, recorded
	}
	if now.IsZero() {
		var err error
		if now, err = m.d.Months.Now(ctx); err != nil {
			return false, fmt.Errorf("redis time: %w", err)
		}
	}
	return i < 0 || infos[i].ActiveSince.IsZero() || now.Before(infos[i].ActiveSince), nil
}

// exclusively runs fn under the tenant's switch lock, or skips it when another node holds the
// lock. fn's work is idempotent (forward-only advance, compare-and-set states), so a lease that
// expires mid-way costs duplicate work at worst, never a wrong state.
func (m *Manager) exclusively(ctx context.Context, tenant string, fn func(context.Context) error) error {
	if m.d.Locks == nil {
		return fn(ctx)
	}
	token, ok, err := m.d.Locks.Acquire(ctx, tenant, switchLock, m.cfg.LockTTL)
	if err != nil {
		return fmt.Errorf("month switch lock of %s: %w", tenant, err)
	}
	if !ok {
		return nil
	}
	defer func() {
		// Released even when ctx ended, so the next pass need not wait for the lease to expire.
		if err := m.d.Locks.Release(context.WithoutCancel(ctx), tenant, switchLock, token); err != nil {
			m.d.Log.WarnContext(ctx, "releasing the month switch lock failed", "tenant", tenant, "err", err)
		}
	}()
	lockedCtx, cancel := context.WithTimeout(ctx, m.cfg.LockTTL)
	defer cancel()
	return fn(lockedCtx)
}

// Advance moves the active month forward to target early (admin, PROTOCOL §6). It refuses
// anything but a valid month after the active one.
func (m *Manager) Advance(ctx context.Context, tenant string, target month.Month) (month.Month, error) {
	if !target.Valid() {
		return 0, apperr.New(apperr.InvalidArgument, "invalid month")
	}
	now, err := m.d.Months.Now(ctx)
	if err != nil {
		return 0, apperr.Wrap(apperr.Busy, "month state unavailable", err)
	}
	// Compared with the catalog's floor too, not only with what Redis holds: a Redis that lost
	// the month must not let an operator move it back.
	active, err := m.reconcile(ctx, tenant, now)
	if err != nil {
		return 0, apperr.Wrap(apperr.Busy, "month state unavailable", err)
	}
	if target < active {
		return 0, apperr.New(apperr.InvalidArgument, "month is before the active month")
	}
	if target > month.Of(now).Add(12) {
		return 0, apperr.New(apperr.InvalidArgument, "month is more than a year ahead")
	}
	if err := m.prepare(ctx, tenant, target); err != nil {
		return 0, apperr.Wrap(apperr.Busy, "preparing the month table failed", err)
	}
	at, err := m.scheduleSwitch(ctx, tenant, target, now)
	if err != nil {
		return 0, err
	}
	if err := m.until(ctx, at); err != nil {
		return 0, apperr.Wrap(apperr.Busy, "waiting for the month switch failed", err)
	}
	// Writable only from the switch's instant on: a reconcile raises Redis to the newest
	// writable month at once, which before the instant would switch earlier than recorded.
	if err := m.markWritable(ctx, tenant, target); err != nil {
		return 0, apperr.Wrap(apperr.Busy, "updating shard states failed", err)
	}
	// The instant has passed, so this makes what the seq script's next step would, in every
	// group; the month before seals only once every group has left it (settle).
	got, _, err := m.advance(ctx, tenant, target)
	if err != nil {
		return 0, apperr.Wrap(apperr.Busy, "advancing the active month failed", err)
	}
	m.d.Floors.Raise(tenant, got)
	if err := m.settle(ctx, tenant, got, now); err != nil {
		return 0, apperr.Wrap(apperr.Busy, "updating shard states failed", err)
	}
	return got, nil
}

// scheduleSwitch records an early switch to target at an instant a lead ahead of Redis TIME,
// then schedules it in Redis for that instant, and returns the instant. The lead is SwitchLead,
// or twice the time since began (Redis TIME when the advance began: its reconcile and prepare
// made catalog calls of the kind the record is) when that is longer, so a loaded catalog gets
// a longer lead. The catalog
// learns the instant before Redis can act on it, so whatever Redis loses afterwards (a
// failover to a replica, this node killed between the two), an allocation in an older month
// after the instant is refused by the write transaction (shard.Superseding), and one before it
// was handed out before the switch and is taken: there is no instant at which a send in the
// month before is neither (DESIGN §7.1). A Redis that learns the schedule after
// the instant switches at once; the sends it allocated in the month before in between are
// refused and allocated again in target.
func (m *Manager) scheduleSwitch(ctx context.Context, tenant string, target month.Month, began time.Time) (time.Time, error) {
	now, err := m.d.Months.Now(ctx)
	if err != nil {
		return time.Time{}, apperr.Wrap(apperr.Busy, "month state unavailable", err)
	}
	lead := max(m.cfg.SwitchLead, 2*now.Sub(began))
	// Milliseconds, as the catalog and the seq script keep instants.
	at := now.Add(lead).Truncate(time.Millisecond)
	if err := m.d.Store.RecordSwitch(ctx, tenant, target, at); err != nil {
		return time.Time{}, apperr.Wrap(apperr.Busy, "recording the switch failed", err)
	}
	// Every group learns the same instant, in group order (DESIGN §7.2): a group that never
	// learns it (this node dies halfway) still holds the month before after the instant, and
	// its sends are refused and raise it as a failover's would.
	late := false
	for g := range m.d.Months.Groups() {
		got, err := m.d.Months.SwitchAt(ctx, tenant, g, target, at)
		if err != nil {
			return time.Time{}, apperr.Wrap(apperr.Busy, "scheduling the month switch failed", fmt.Errorf("group %d: %w", g, err))
		}
		late = late || got == target
	}
	if late {
		// Redis switched at once: the instant had passed when it learned of the switch.
		m.d.Log.WarnContext(ctx, "early month switch scheduled after its instant; sends allocated in the month before since then are refused and allocated again",
			"tenant", tenant, "month", target.String(), "at", at, "lead", lead)
	}
	return at, nil
}

// until sleeps out what is left, by Redis TIME, before at.
func (m *Manager) until(ctx context.Context, at time.Time) error {
	now, err := m.d.Months.Now(ctx)
	if err != nil {
		return fmt.Errorf("redis time: %w", err)
	}
	if !now.Before(at) {
		return nil
	}
	return m.d.Sleep(ctx, at.Sub(now))
}

// markWritable moves a prepared month to writable; a month in any other state keeps it.
func (m *Manager) markWritable(ctx context.Context, tenant string, mo month.Month) error {
	state, err := m.state(ctx, tenant, mo)
	if err != nil {
		return err
	}
	if state != shard.Prepared {
		return nil
	}
	if err := m.d.Store.SetState(ctx, tenant, mo, shard.Prepared, shard.Writable); err != nil {
		return fmt.Errorf("%s %s→%s: %w", mo, shard.Prepared, shard.Writable, err)
	}
	m.d.Log.InfoContext(ctx, "shard state changed", "tenant", tenant, "month", mo.String(), "from", shard.Prepared, "to", shard.Writable)
	return nil
}

// prepare creates and registers a month table, then marks it ready for the seq script.
func (m *Manager) prepare(ctx context.Context, tenant string, mo month.Month) error {
	if err := m.d.Store.EnsureTable(ctx, tenant, mo); err != nil {
		return fmt.Errorf("ensure table %s: %w", mo, err)
	}
	// Ready, the month is the active one once Redis TIME enters it (the seq script switches
	// then), so a fresh allocation in an older month after its first instant came from a
	// Redis that lost the switch (shard.Superseding). Recorded before Redis learns the month
	// is ready, as an early switch is (scheduleSwitch).
	if err := m.d.Store.RecordSwitch(ctx, tenant, mo, mo.Start()); err != nil {
		return fmt.Errorf("record the switch to %s: %w", mo, err)
	}
	return m.markReady(ctx, tenant, mo)
}

// markReady marks a month ready in every slot group, in group order.
func (m *Manager) markReady(ctx context.Context, tenant string, mo month.Month) error {
	for g := range m.d.Months.Groups() {
		if err := m.d.Months.MarkReady(ctx, tenant, g, mo); err != nil {
			return fmt.Errorf("mark %s ready in group %d of %s: %w", mo, g, tenant, err)
		}
	}
	return nil
}

// advance moves every slot group's active month forward to target, in group order, stopping
// at the first that fails (DESIGN §7.2). It returns the oldest of the groups' active months
// after the call, switched (zero while a group has none): the month every group has reached,
// so the months before it take no more fresh sends and may seal (settle). newest is the
// newest of them. Each group's month raises this process's floor as it comes: a group that
// switched makes the month active, so this process's sends to a group not reached yet (this
// pass fails at it) raise that group rather than allocate behind (seed 000 §3.3).
func (m *Manager) advance(ctx context.Context, tenant string, target month.Month) (switched, newest month.Month, err error) {
	for g := range m.d.Months.Groups() {
		got, err := m.d.Months.Advance(ctx, tenant, g, target)
		if err != nil {
			return 0, 0, fmt.Errorf("group %d: %w", g, err)
		}
		m.d.Floors.Raise(tenant, got)
		if g == 0 || got < switched {
			switched = got
		}
		newest = max(newest, got)
	}
	return switched, newest, nil
}

// Run calls Ensure for every tenant every interval until ctx ends; the caller runs the first
// pass itself at start, so a failure there can stop the start.
func (m *Manager) Run(ctx context.Context, tenants []string, interval time.Duration) {
	periodic.EveryTenant(ctx, interval, func() []string { return tenants }, func(ctx context.Context, tenant string) {
		if err := m.Ensure(ctx, tenant); err != nil && ctx.Err() == nil {
			m.d.Log.ErrorContext(ctx, "shard manager pass failed", "tenant", tenant, "err", err)
		}
	})
}
