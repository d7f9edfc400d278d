package shardmanager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
)

// upkeep deletes expired dedup records in small batches (seed 000 §3.5) and copies the
// statistics of the months that still change from the mirror into the catalog.
func (m *Manager) upkeep(ctx context.Context, tenant string, now time.Time) error {
	if m.d.Housekeeping == nil {
		return nil
	}
	purged, purgeErr := m.purgeDedup(ctx, tenant, now)
	if purged > 0 {
		m.d.Log.InfoContext(ctx, "expired dedup records deleted", "tenant", tenant, "rows", purged)
	}
	infos, err := m.d.Store.Catalog(ctx, tenant)
	if err != nil {
		return errors.Join(purgeErr, fmt.Errorf("catalog of %s: %w", tenant, err))
	}
	errs := purgeErr
	for _, in := range infos {
		if in.State.AcceptsWrites() {
			errs = errors.Join(errs, m.refreshStats(ctx, tenant, in.Month))
		}
	}
	return errs
}

// purgeDedup runs at most DedupPurgeBatches deletes of DedupPurgeBatch rows each.
func (m *Manager) purgeDedup(ctx context.Context, tenant string, now time.Time) (int64, error) {
	var total int64
	for range m.cfg.DedupPurgeBatches {
		n, err := m.d.Housekeeping.PurgeExpiredDedup(ctx, tenant, now, m.cfg.DedupPurgeBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("purge expired dedup records of %s: %w", tenant, err)
		}
		if n < int64(m.cfg.DedupPurgeBatch) {
			break
		}
	}
	return total, nil
}

func (m *Manager) refreshStats(ctx context.Context, tenant string, mo month.Month) error {
	if m.d.Housekeeping == nil {
		return nil
	}
	if err := m.d.Housekeeping.RefreshStats(ctx, tenant, mo); err != nil {
		return fmt.Errorf("refresh statistics of %s: %w", mo, err)
	}
	return nil
}

// report sets the gauges the alerts of seed 000 §11 watch, from this node's view:
// group_message_shard_ready{tenant, month} for the active month (set in Redis and writable),
// the current calendar month (writable) and the next one (ready to switch to), and
// group_message_compensation_backlog{tenant}. A gauge it cannot read keeps its last value.
func (m *Manager) report(ctx context.Context, tenant string, cur month.Month) {
	infos, err := m.d.Store.Catalog(ctx, tenant)
	if err != nil {
		m.d.Log.WarnContext(ctx, "shard gauges not updated", "tenant", tenant, "err", err)
		return
	}
	states := make(map[month.Month]shard.State, len(infos))
	for _, in := range infos {
		states[in.Month] = in.State
	}
	writable := func(mo month.Month) bool { s, ok := states[mo]; return ok && s.AcceptsWrites() }
	ready := func(mo month.Month) bool { s, ok := states[mo]; return ok && s.Ready() }
	m.setReady(tenant, "current", writable(cur))
	m.setReady(tenant, "next", ready(cur.Next()))
	if active, found, err := m.d.Months.Active(ctx, tenant); err != nil {
		m.d.Log.WarnContext(ctx, "active month gauge not updated", "tenant", tenant, "err", err)
	} else {
		m.setReady(tenant, "active", found && writable(active))
	}
	if m.d.Compensation == nil {
		return
	}
	if n, err := m.d.Compensation.Len(ctx, tenant); err != nil {
		m.d.Log.WarnContext(ctx, "compensation gauge not updated", "tenant", tenant, "err", err)
	} else {
		m.d.Metrics.Set("group_message_compensation_backlog", float64(n), tenant)
	}
}

func (m *Manager) setReady(tenant, which string, ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	m.d.Metrics.Set("group_message_shard_ready", v, tenant, which)
}
