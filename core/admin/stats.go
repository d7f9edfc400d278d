package admin

import (
	"context"

	"imd/core/apperr"
	"imd/core/month"
	"imd/core/stats"
)

// Stats summarizes a tenant: its users and groups, and per month table its state, messages
// and active topics, from the catalog and the route mirror (seed 000 §6.6: never a COUNT(*)
// over a month table). from and to bound the months, inclusive; 0 leaves a side open.
func (s *Service) Stats(ctx context.Context, tenant string, from, to month.Month) (stats.Tenant, error) {
	if (from != 0 && !from.Valid()) || (to != 0 && !to.Valid()) || (from != 0 && to != 0 && from > to) {
		return stats.Tenant{}, apperr.New(apperr.InvalidArgument, "from and to must be months YYYYMM, from ≤ to")
	}
	totals, err := s.d.Summaries.Totals(ctx, tenant)
	if err != nil {
		return stats.Tenant{}, busy("count users and groups", err)
	}
	catalog, err := s.d.Shards.Catalog(ctx, tenant)
	if err != nil {
		return stats.Tenant{}, busy("read catalog", err)
	}
	sums, err := s.d.Summaries.MirrorMonths(ctx, tenant)
	if err != nil {
		return stats.Tenant{}, busy("read route mirror", err)
	}
	byMonth := make(map[month.Month]stats.MirrorMonth, len(sums))
	for _, m := range sums {
		byMonth[m.Month] = m
	}
	out := stats.Tenant{Totals: totals, Months: []stats.Month{}}
	for _, c := range catalog {
		if (from != 0 && c.Month < from) || (to != 0 && c.Month > to) {
			continue
		}
		m := byMonth[c.Month]
		out.Months = append(out.Months, stats.Month{
			Month: c.Month, Table: c.Table, State: c.State,
			Messages: m.Messages, Topics: m.Topics, GroupTopics: m.GroupTopics, P2PTopics: m.Topics - m.GroupTopics,
			FirstAt: m.FirstAt, LastAt: m.LastAt,
		})
	}
	return out, nil
}
