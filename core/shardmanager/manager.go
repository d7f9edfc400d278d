// Package shardmanager keeps each tenant's month tables ready and moves them through their
// lifecycle (seed 000 §4, §10; DESIGN §7). DDL runs here, never inside a write transaction.
package shardmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"imd/core/apperr"
	"imd/core/month"
	"imd/core/shard"
	"imd/ports"
)

// Config of the lifecycle.
type Config struct {
	// SealingDays is how long a past month keeps accepting late writes (seed 000 §4.5).
	SealingDays int
	// AheadMonths is how many future months get tables (seed 000 §4.1: two).
	AheadMonths int
}

// Deps are the ports the manager uses.
type Deps struct {
	Store   ports.ShardStore
	Months  ports.MonthState
	Metrics ports.Metrics
	Log     *slog.Logger
}

// Manager runs the shard lifecycle.
type Manager struct {
	cfg Config
	d   Deps
}

// New returns a manager.
func New(cfg Config, d Deps) *Manager {
	if cfg.AheadMonths <= 0 {
		cfg.AheadMonths = 2
	}
	return &Manager{cfg: cfg, d: d}
}

// Ensure prepares last, current and the next months, switches the active month when the
// calendar month turned (only to a ready table), and advances states. It is safe to run on
// every node at any time.
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
	active, err := m.d.Months.Advance(ctx, tenant, cur)
	if err != nil {
		return fmt.Errorf("advance active month of %s: %w", tenant, err)
	}
	return errors.Join(failed, m.settle(ctx, tenant, active, now))
}

// Advance moves the active month forward to target early (admin, PROTOCOL §6). It refuses
// anything but a valid month after the active one.
func (m *Manager) Advance(ctx context.Context, tenant string, target month.Month) (month.Month, error) {
	if !target.Valid() {
		return 0, apperr.New(apperr.InvalidArgument, "invalid month")
	}
	active, found, err := m.d.Months.Active(ctx, tenant)
	if err != nil {
		return 0, apperr.Wrap(apperr.Busy, "month state unavailable", err)
	}
	if found && target < active {
		return 0, apperr.New(apperr.InvalidArgument, "month is before the active month")
	}
	now, err := m.d.Months.Now(ctx)
	if err != nil {
		return 0, apperr.Wrap(apperr.Busy, "month state unavailable", err)
	}
	if target > month.Of(now).Add(12) {
		return 0, apperr.New(apperr.InvalidArgument, "month is more than a year ahead")
	}
	if err := m.prepare(ctx, tenant, target); err != nil {
		return 0, apperr.Wrap(apperr.Busy, "preparing the month table failed", err)
	}
	got, err := m.d.Months.Advance(ctx, tenant, target)
	if err != nil {
		return 0, apperr.Wrap(apperr.Busy, "advancing the active month failed", err)
	}
	if err := m.settle(ctx, tenant, got, now); err != nil {
		return 0, apperr.Wrap(apperr.Busy, "updating shard states failed", err)
	}
	return got, nil
}

// prepare creates and registers a month table, then marks it ready for the seq script.
func (m *Manager) prepare(ctx context.Context, tenant string, mo month.Month) error {
	if err := m.d.Store.EnsureTable(ctx, tenant, mo); err != nil {
		return fmt.Errorf("ensure table %s: %w", mo, err)
	}
	if err := m.d.Months.MarkReady(ctx, tenant, mo); err != nil {
		return fmt.Errorf("mark %s ready: %w", mo, err)
	}
	return nil
}

// settle moves catalog states: the active month is writable; earlier writable months are
// sealing; sealing months are sealed once the late-write window has passed.
func (m *Manager) settle(ctx context.Context, tenant string, active month.Month, now time.Time) error {
	infos, err := m.d.Store.Catalog(ctx, tenant)
	if err != nil {
		return fmt.Errorf("catalog of %s: %w", tenant, err)
	}
	var errs error
	for _, in := range infos {
		var to shard.State
		switch {
		case in.Month == active && in.State == shard.Prepared:
			to = shard.Writable
		case in.Month < active && (in.State == shard.Writable || in.State == shard.Prepared):
			to = shard.Sealing
		case in.Month < active && in.State == shard.Sealing &&
			now.After(in.Month.End().AddDate(0, 0, m.cfg.SealingDays)):
			to = shard.Sealed
		default:
			continue
		}
		if err := m.d.Store.SetState(ctx, tenant, in.Month, in.State, to); err != nil {
			errs = errors.Join(errs, fmt.Errorf("%s %s→%s: %w", in.Month, in.State, to, err))
			continue
		}
		m.d.Log.InfoContext(ctx, "shard state changed", "tenant", tenant, "month", in.Month.String(), "from", in.State, "to", to)
	}
	return errs
}

// Run calls Ensure for every tenant every interval until ctx ends; the caller runs the first
// pass itself at start, so a failure there can stop the start.
func (m *Manager) Run(ctx context.Context, tenants []string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, tenant := range tenants {
			if err := m.Ensure(ctx, tenant); err != nil && ctx.Err() == nil {
				m.d.Log.ErrorContext(ctx, "shard manager pass failed", "tenant", tenant, "err", err)
			}
		}
	}
}
