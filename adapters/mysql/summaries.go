package mysql

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/stats"
	"github.com/imdhq/imd/ports"
)

// Summaries implements ports.Summaries: month sums over the route mirror, never a COUNT over a
// month table (seed 000 §6.6), the size of the social graph, and the daily summary, which it
// also adds to (ports.DailyCounter).
type Summaries struct {
	cluster *Cluster
	now     func() time.Time
}

var (
	_ ports.Summaries    = (*Summaries)(nil)
	_ ports.DailyCounter = (*Summaries)(nil)
)

// NewSummaries returns the statistics of the provisioned tenants of c.
func NewSummaries(c *Cluster) *Summaries { return &Summaries{cluster: c, now: time.Now} }

// MirrorMonths sums the route mirror per month.
func (s *Summaries) MirrorMonths(ctx context.Context, tenant string) ([]stats.MirrorMonth, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.MirrorMonthSums(ctx)
	if err != nil {
		return nil, fmt.Errorf("mirror month sums: %w", err)
	}
	out := make([]stats.MirrorMonth, 0, len(rows))
	for _, r := range rows {
		m, err := month.Parse(r.ShardMonth)
		if err != nil {
			return nil, fmt.Errorf("mirror month sums: %w", err)
		}
		out = append(out, stats.MirrorMonth{
			Month: m, Messages: r.Messages, Topics: r.Topics, GroupTopics: r.GroupTopics,
			FirstAt: r.FirstAt.UTC(), LastAt: r.LastAt.UTC(),
		})
	}
	return out, nil
}

// Totals counts users and groups; these tables hold one row per user or group, not messages.
func (s *Summaries) Totals(ctx context.Context, tenant string) (stats.Totals, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return stats.Totals{}, err
	}
	users, err := t.q.CountUsers(ctx)
	if err != nil {
		return stats.Totals{}, fmt.Errorf("count users: %w", err)
	}
	groups, err := t.q.CountGroups(ctx)
	if err != nil {
		return stats.Totals{}, fmt.Errorf("count groups: %w", err)
	}
	return stats.Totals{Users: users, Groups: groups}, nil
}

// Days reads the newest limit days of the range through the primary key and returns them
// ascending.
func (s *Summaries) Days(ctx context.Context, tenant string, from, to time.Time, limit int) ([]stats.Day, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	lim, err := limit32(limit)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.DailyStatsBetween(ctx, sqlcdb.DailyStatsBetweenParams{FromDay: stats.DayOf(from), ToDay: stats.DayOf(to), Limit: lim})
	if err != nil {
		return nil, fmt.Errorf("daily stats %s–%s: %w", from.Format(time.DateOnly), to.Format(time.DateOnly), err)
	}
	out := make([]stats.Day, len(rows))
	for i, r := range rows {
		out[i] = stats.Day{Day: stats.DayOf(r.Day), Messages: r.Messages, GroupMessages: r.GroupMessages, P2PMessages: r.P2pMessages}
	}
	slices.Reverse(out)
	return out, nil
}

// AddDay upserts the day's row, adding to what it holds.
func (s *Summaries) AddDay(ctx context.Context, tenant string, d stats.Day) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	err = t.q.AddDailyStats(ctx, sqlcdb.AddDailyStatsParams{
		Day: stats.DayOf(d.Day), Messages: d.Messages, GroupMessages: d.GroupMessages, P2pMessages: d.P2PMessages,
		UpdatedAt: s.now().UTC(),
	})
	if err != nil {
		return fmt.Errorf("add daily stats of %s: %w", d.Day.Format(time.DateOnly), err)
	}
	return nil
}
