package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// RouteMirror implements ports.RouteMirror over each tenant's route mirror and month tables.
type RouteMirror struct {
	cluster *Cluster
}

var _ ports.RouteMirror = (*RouteMirror)(nil)

// NewRouteMirror returns the route mirror reader over the provisioned tenants of c.
func NewRouteMirror(c *Cluster) *RouteMirror { return &RouteMirror{cluster: c} }

// Topics lists the mirror's topics after `after`, ascending.
func (r *RouteMirror) Topics(ctx context.Context, tenant, after string, limit int) ([]string, error) {
	t, err := r.cluster.tenant(tenant)
	if err != nil || limit <= 0 {
		return nil, err
	}
	topics, err := t.q.MirrorTopics(ctx, sqlcdb.MirrorTopicsParams{After: after, Limit: clampLimit(limit)})
	if err != nil {
		return nil, fmt.Errorf("mirror topics after %q: %w", after, err)
	}
	return topics, nil
}

// TopicsIn lists the topics with a segment in m after `after`, ascending.
func (r *RouteMirror) TopicsIn(ctx context.Context, tenant string, m month.Month, after string, limit int) ([]string, error) {
	t, err := r.cluster.tenant(tenant)
	if err != nil || limit <= 0 {
		return nil, err
	}
	if !m.Valid() {
		return nil, fmt.Errorf("mirror topics: %w: %d", month.ErrInvalid, int32(m))
	}
	topics, err := t.q.MirrorTopicsIn(ctx, sqlcdb.MirrorTopicsInParams{ShardMonth: m.String(), After: after, Limit: clampLimit(limit)})
	if err != nil {
		return nil, fmt.Errorf("mirror topics of %s after %q: %w", m, after, err)
	}
	return topics, nil
}

// TopicsSince lists the topics with a message in m at or after since, after `after`, ascending.
func (r *RouteMirror) TopicsSince(ctx context.Context, tenant string, m month.Month, since time.Time, after string, limit int) ([]string, error) {
	t, err := r.cluster.tenant(tenant)
	if err != nil || limit <= 0 {
		return nil, err
	}
	if !m.Valid() {
		return nil, fmt.Errorf("mirror topics: %w: %d", month.ErrInvalid, int32(m))
	}
	topics, err := t.q.MirrorTopicsSince(ctx, sqlcdb.MirrorTopicsSinceParams{ShardMonth: m.String(), After: after,
		Since: since.UTC(), Limit: clampLimit(limit)})
	if err != nil {
		return nil, fmt.Errorf("mirror topics of %s since %s after %q: %w", m, since, after, err)
	}
	return topics, nil
}

// TableSegment reads the topic's real range in m's table.
func (r *RouteMirror) TableSegment(ctx context.Context, tenant string, m month.Month, topicName string) (route.Segment, bool, error) {
	t, err := r.cluster.tenant(tenant)
	if err != nil {
		return route.Segment{}, false, err
	}
	return tableSegment(ctx, t, t.db, m, topicName)
}

func tableSegment(ctx context.Context, t *tenantDB, db sqlcdb.DBTX, m month.Month, topicName string) (route.Segment, bool, error) {
	table, err := t.months.on(ctx, db, m)
	if err != nil {
		return route.Segment{}, false, fmt.Errorf("table range of %s: %w", topicName, err)
	}
	row, err := sqlcdb.New(table).TableSegment(ctx, topicName)
	if errors.Is(err, sql.ErrNoRows) {
		return route.Segment{}, false, nil
	}
	if err != nil {
		return route.Segment{}, false, fmt.Errorf("table range of %s in %s: %w", topicName, m, err)
	}
	return route.Segment{
		Month: m, MinSeq: row.MinSeq, MaxSeq: row.MaxSeq, Count: row.RowCount,
		MinCreatedAt: row.MinCreatedAt.UTC(), MaxCreatedAt: row.MaxCreatedAt.UTC(),
	}, true, nil
}

// Recount rewrites the topic's mirror row of m from m's table. It runs in REPEATABLE READ and
// first locks the topic's mirror rows (and, there, the gap where a missing row would go), the
// same rows a batch writer locks before it inserts: a writer of the topic has either committed
// before the lock, and is counted in the table read that follows, or waits and adds its rows to
// the recounted row afterwards. The table read does not lock, so no cycle with writers forms.
func (r *RouteMirror) Recount(ctx context.Context, tenant string, m month.Month, topicName string) (seg route.Segment, found bool, err error) {
	t, err := r.cluster.tenant(tenant)
	if err != nil {
		return route.Segment{}, false, err
	}
	tx, err := t.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return route.Segment{}, false, fmt.Errorf("recount %s in %s: %w", topicName, m, err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	q := sqlcdb.New(tx)
	if _, err := q.LockTopicShards(ctx, []string{topicName}); err != nil {
		return route.Segment{}, false, fmt.Errorf("recount %s in %s: lock mirror: %w", topicName, m, err)
	}
	seg, found, err = tableSegment(ctx, t, tx, m, topicName)
	if err != nil {
		return route.Segment{}, false, fmt.Errorf("recount: %w", err)
	}
	if found {
		err = q.SetTopicShard(ctx, sqlcdb.SetTopicShardParams{
			Topic: topicName, ShardMonth: m.String(), MinSeq: seg.MinSeq, MaxSeq: seg.MaxSeq,
			MessageCount: seg.Count, MinCreatedAt: seg.MinCreatedAt, MaxCreatedAt: seg.MaxCreatedAt,
		})
	} else {
		err = q.DeleteTopicShard(ctx, sqlcdb.DeleteTopicShardParams{Topic: topicName, ShardMonth: m.String()})
	}
	if err != nil {
		return route.Segment{}, false, fmt.Errorf("recount %s in %s: write mirror: %w", topicName, m, err)
	}
	if err := tx.Commit(); err != nil {
		return route.Segment{}, false, fmt.Errorf("recount %s in %s: commit: %w", topicName, m, err)
	}
	return seg, found, nil
}

// Housekeeping implements ports.ShardHousekeeping.
type Housekeeping struct {
	cluster *Cluster
}

var _ ports.ShardHousekeeping = (*Housekeeping)(nil)

// NewHousekeeping returns the shard upkeep over the provisioned tenants of c.
func NewHousekeeping(c *Cluster) *Housekeeping { return &Housekeeping{cluster: c} }

// PurgeExpiredDedup deletes up to limit records that expired before now, oldest first.
func (h *Housekeeping) PurgeExpiredDedup(ctx context.Context, tenant string, now time.Time, limit int) (int64, error) {
	t, err := h.cluster.tenant(tenant)
	if err != nil || limit <= 0 {
		return 0, err
	}
	n, err := t.q.PurgeExpiredDedup(ctx, sqlcdb.PurgeExpiredDedupParams{Now: now.UTC(), Limit: clampLimit(limit)})
	if err != nil {
		return 0, fmt.Errorf("purge expired dedup records: %w", err)
	}
	return n, nil
}

// RefreshStats copies m's statistics from the mirror into its catalog row.
func (h *Housekeeping) RefreshStats(ctx context.Context, tenant string, m month.Month) error {
	t, err := h.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if !m.Valid() {
		return fmt.Errorf("refresh stats: %w: %d", month.ErrInvalid, int32(m))
	}
	// An UPDATE that changes nothing affects no row either, so registration is checked apart.
	if _, err := t.q.MonthState(ctx, m.String()); errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("refresh stats of %s: %w", m, shard.ErrMonthMissing)
	} else if err != nil {
		return fmt.Errorf("refresh stats of %s: %w", m, err)
	}
	if err := t.q.RefreshMonthStats(ctx, sqlcdb.RefreshMonthStatsParams{Month: m.String()}); err != nil {
		return fmt.Errorf("refresh stats of %s: %w", m, err)
	}
	return nil
}

// clampLimit turns a positive limit into a LIMIT argument.
func clampLimit(limit int) int32 { return int32(min(limit, math.MaxInt32)) }
