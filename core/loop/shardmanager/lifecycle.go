package shardmanager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// compensationScan bounds how many compensation entries the backlog check reads; a longer
// list holds every sealing month back, since it cannot tell which months it concerns.
const compensationScan = 1000

// settle moves catalog states (seed 000 §4.4–4.6, §10): the active month is writable; earlier
// writable months are sealing; a sealing month is sealed once its late-write window has passed
// and no backlog concerns it.
func (m *Manager) settle(ctx context.Context, tenant string, active month.Month, now time.Time) error {
	infos, err := m.d.Store.Catalog(ctx, tenant)
	if err != nil {
		return fmt.Errorf("catalog of %s: %w", tenant, err)
	}
	var errs error
	for _, in := range infos {
		to, ok, err := m.next(ctx, tenant, in, active, now)
		if err != nil {
			errs = errors.Join(errs, err)
			continue
		}
		if !ok {
			continue
		}
		if to == shard.Sealed {
			// The last statistics a month gets while it can still change.
			errs = errors.Join(errs, m.refreshStats(ctx, tenant, in.Month))
		}
		if err := m.d.Store.SetState(ctx, tenant, in.Month, in.State, to); err != nil {
			errs = errors.Join(errs, fmt.Errorf("%s %s→%s: %w", in.Month, in.State, to, err))
			continue
		}
		m.d.Log.InfoContext(ctx, "shard state changed", "tenant", tenant, "month", in.Month.String(), "from", in.State, "to", to)
	}
	return errs
}

// next is the state a month moves to now, ok=false when it stays.
func (m *Manager) next(ctx context.Context, tenant string, in shard.Info, active month.Month, now time.Time) (shard.State, bool, error) {
	switch {
	case in.Month == active && in.State == shard.Prepared:
		return shard.Writable, true, nil
	case in.Month < active && (in.State == shard.Writable || in.State == shard.Prepared):
		return shard.Sealing, true, nil
	case in.Month < active && in.State == shard.Sealing && m.lateWindowOver(in.Month, now):
		reason, err := m.backlog(ctx, tenant, in.Month)
		if err != nil {
			return "", false, fmt.Errorf("backlog of %s: %w", in.Month, err)
		}
		if reason != "" {
			m.d.Log.InfoContext(ctx, "sealing held back", "tenant", tenant, "month", in.Month.String(), "reason", reason)
			return "", false, nil
		}
		return shard.Sealed, true, nil
	}
	return "", false, nil
}

// lateWindowOver reports whether the month stopped taking late writes.
func (m *Manager) lateWindowOver(mo month.Month, now time.Time) bool {
	return !now.Before(m.SealsAt(mo))
}

// SealsAt is when month mo stops taking late writes, SealingDays after its end: from then on a
// sealing month is sealed unless a backlog holds it back.
func (m *Manager) SealsAt(mo month.Month) time.Time {
	return mo.End().AddDate(0, 0, m.cfg.SealingDays)
}

// backlog names what still concerns month mo, "" when nothing does: a pending route repair
// (the queue keeps topics, so any one counts) or a compensation entry of the month, which an
// operator replays after reopening it.
func (m *Manager) backlog(ctx context.Context, tenant string, mo month.Month) (string, error) {
	if m.d.Repairs != nil {
		pending, err := m.d.Repairs.Pending(ctx, tenant, mo)
		if err != nil {
			return "", err
		}
		if pending {
			return "route repairs pending", nil
		}
	}
	if m.d.Compensation == nil {
		return "", nil
	}
	n, err := m.d.Compensation.Len(ctx, tenant)
	if err != nil {
		return "", fmt.Errorf("compensation list: %w", err)
	}
	if n > compensationScan {
		return "compensation list too long to inspect", nil
	}
	entries, err := m.d.Compensation.List(ctx, tenant, compensationScan)
	if err != nil {
		return "", fmt.Errorf("compensation list: %w", err)
	}
	for _, e := range entries {
		if e.Message.Month == mo {
			return "compensation entries pending", nil
		}
	}
	return "", nil
}

// Archive marks a sealed month archived (seed 000 §10). It is a state only: the table stays
// where it is, and nothing writes to it either way. Archiving an archived month is a no-op.
func (m *Manager) Archive(ctx context.Context, tenant string, mo month.Month) error {
	if !mo.Valid() {
		return apperr.New(apperr.InvalidArgument, "invalid month")
	}
	state, err := m.state(ctx, tenant, mo)
	if err != nil {
		return err
	}
	switch state {
	case shard.Archived:
		return nil
	case shard.Sealed:
	default:
		return apperr.New(apperr.Conflict, fmt.Sprintf("month is %s; only a sealed month can be archived", state))
	}
	if err := m.d.Store.SetState(ctx, tenant, mo, shard.Sealed, shard.Archived); err != nil {
		// Another operator may have won the race; only then is the month archived now.
		if now, stateErr := m.state(ctx, tenant, mo); stateErr == nil && now == shard.Archived {
			return nil
		}
		return apperr.Wrap(apperr.Busy, "archiving the month failed", err)
	}
	m.d.Log.InfoContext(ctx, "shard state changed", "tenant", tenant, "month", mo.String(), "from", shard.Sealed, "to", shard.Archived)
	return nil
}

// state reads one month's catalog state; 40401 when the month is not in the catalog.
func (m *Manager) state(ctx context.Context, tenant string, mo month.Month) (shard.State, error) {
	infos, err := m.d.Store.Catalog(ctx, tenant)
	if err != nil {
		return "", apperr.Wrap(apperr.Busy, "catalog unavailable", err)
	}
	for _, in := range infos {
		if in.Month == mo {
			return in.State, nil
		}
	}
	return "", apperr.New(apperr.NotFound, "month not in the catalog")
}

// Compensation lists the oldest limit refused late writes and how many there are in all.
func (m *Manager) Compensation(ctx context.Context, tenant string, limit int) ([]ports.Compensation, int64, error) {
	if m.d.Compensation == nil {
		return nil, 0, nil
	}
	total, err := m.d.Compensation.Len(ctx, tenant)
	if err != nil {
		return nil, 0, apperr.Wrap(apperr.Busy, "compensation list unavailable", err)
	}
	entries, err := m.d.Compensation.List(ctx, tenant, limit)
	if err != nil {
		return nil, 0, apperr.Wrap(apperr.Busy, "compensation list unavailable", err)
	}
	return entries, total, nil
}
