package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// ShardStore implements ports.ShardStore: month-table DDL and the catalog (seed 000 §3.2, §4).
type ShardStore struct {
	cluster *Cluster
}

var _ ports.ShardStore = (*ShardStore)(nil)

// NewShardStore returns the shard store over the provisioned tenants of c.
func NewShardStore(c *Cluster) *ShardStore { return &ShardStore{cluster: c} }

// EnsureTable creates m's table from the template when missing, then registers it as prepared;
// a registered month keeps its state. The DDL runs on its own, never inside a write transaction.
func (s *ShardStore) EnsureTable(ctx context.Context, tenant string, m month.Month) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	name, err := m.Table()
	if err != nil {
		return fmt.Errorf("ensure month table: %w", err)
	}
	if _, err := month.ParseTable(name); err != nil {
		return fmt.Errorf("ensure month table: %w", err)
	}
	// name passed the whitelist; identifiers cannot be bound as parameters.
	ddl := "CREATE TABLE IF NOT EXISTS `" + name + "` LIKE `" + month.TemplateTable + "`"
	if _, err := t.db.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	err = t.q.RegisterMonth(ctx, sqlcdb.RegisterMonthParams{
		ShardMonth: m.String(), TableName: name, ShardStart: m.Start(), ShardEnd: m.End(),
	})
	if err != nil {
		return fmt.Errorf("register %s: %w", name, err)
	}
	t.months.add(m)
	return nil
}

// Catalog lists the registered months; row counts and time ranges come from the route mirror.
func (s *ShardStore) Catalog(ctx context.Context, tenant string) ([]shard.Info, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.Catalog(ctx)
	if err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	stats, err := t.q.MonthStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("read month stats: %w", err)
	}
	byMonth := make(map[string]sqlcdb.MonthStatsRow, len(stats))
	for _, st := range stats {
		byMonth[st.ShardMonth] = st
	}
	out := make([]shard.Info, 0, len(rows))
	for _, r := range rows {
		m, err := month.Parse(r.ShardMonth)
		if err != nil {
			return nil, fmt.Errorf("catalog row: %w", err)
		}
		st := byMonth[r.ShardMonth]
		out = append(out, shard.Info{
			Month: m, Table: r.TableName, State: shard.State(r.Status), RowCount: st.RowCount,
			MinCreatedAt: st.MinCreatedAt.UTC(), MaxCreatedAt: st.MaxCreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
			ActiveSince: nullTimeUTC(r.ActiveSince),
		})
	}
	return out, nil
}

// SetState moves m from one state to another, only if it is in from (compare-and-set).
func (s *ShardStore) SetState(ctx context.Context, tenant string, m month.Month, from, to shard.State) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if !knownState(to) {
		return fmt.Errorf("set state of %s: unknown state %q", m, to)
	}
	n, err := t.q.SetMonthState(ctx, sqlcdb.SetMonthStateParams{
		ToStatus: string(to), ShardMonth: m.String(), FromStatus: string(from),
	})
	if err != nil {
		return fmt.Errorf("set state of %s: %w", m, err)
	}
	if n == 1 {
		return nil
	}
	// Nothing changed: the month is missing, in another state, or already in to (from == to).
	cur, err := t.q.MonthState(ctx, m.String())
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("set state of %s: %w", m, shard.ErrMonthMissing)
	}
	if err != nil {
		return fmt.Errorf("set state of %s: %w", m, err)
	}
	if shard.State(cur) == from && from == to {
		return nil
	}
	return fmt.Errorf("set state of %s: %w: it is %s, not %s", m, ErrStateChanged, cur, from)
}

// RecordSwitch keeps the earliest ActiveSince of m; see ports.ShardStore.
func (s *ShardStore) RecordSwitch(ctx context.Context, tenant string, m month.Month, at time.Time) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := recordActive(ctx, t.q, m, at); err != nil {
		return fmt.Errorf("record switch to %s: %w", m, err)
	}
	return nil
}

// recordActive lowers m's ActiveSince to at when it holds a later one or none: each record is
// an instant by which m is active, so the earliest stands (shard.EarlierActive). It runs as a
// statement of its own, holding no other lock while it waits for the batches' shared ones.
func recordActive(ctx context.Context, q *sqlcdb.Queries, m month.Month, at time.Time) error {
	return q.RecordMonthSwitch(ctx, sqlcdb.RecordMonthSwitchParams{
		ActiveSince: sql.NullTime{Time: at.UTC().Truncate(time.Millisecond), Valid: true}, ShardMonth: m.String(),
	})
}

// ErrStateChanged: SetState found the month in another state than expected.
var ErrStateChanged = errors.New("month state changed")

func knownState(s shard.State) bool {
	switch s {
	case shard.Prepared, shard.Writable, shard.Sealing, shard.Sealed, shard.Archived:
		return true
	}
	return false
}
