package mysql

import (
	"context"
	"fmt"

	"imd/core/month"
	"imd/core/stats"
	"imd/ports"
)

// Summaries implements ports.Summaries: month sums over the route mirror, never a COUNT over a
// month table (seed 000 §6.6), and the size of the social graph.
type Summaries struct{ cluster *Cluster }

var _ ports.Summaries = (*Summaries)(nil)

// NewSummaries returns the statistics reader of the provisioned tenants of c.
func NewSummaries(c *Cluster) *Summaries { return &Summaries{cluster: c} }

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
