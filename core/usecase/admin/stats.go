package admin

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/stats"
)

// MaxStatsDays bounds the days one Stats call returns: a year, leap day included.
const MaxStatsDays = 366

// Product bounds of the open sides of a stats range (core/domain/month: years 2000–2999).
var (
	firstStatsDay = month.Month(200001).Start()
	lastStatsDay  = month.Month(299912).End().AddDate(0, 0, -1)
)

// Stats summarizes a tenant: its users and groups; per month table its state, messages and
// active topics, from the catalog and the route mirror; and per day its messages by
// conversation kind, from the daily summary (seed 000 §6.6: never a COUNT(*) over a month
// table). from and to bound the days, inclusive, as UTC dates (any time of day); the months
// listed are those the bounds fall in, and any later table holding messages of those days (the
// month advanced early); a zero time leaves that side open. Days without
// messages have no row, and of a range holding more than MaxStatsDays rows the newest are
// returned.
func (s *Service) Stats(ctx context.Context, tenant string, from, to time.Time) (stats.Tenant, error) {
	fromMonth, toMonth, err := statsMonths(from, to)
	if err != nil {
		return stats.Tenant{}, err
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
	firstDay, lastDay := firstStatsDay, lastStatsDay
	if !from.IsZero() {
		firstDay = stats.DayOf(from)
	}
	if !to.IsZero() {
		lastDay = stats.DayOf(to)
	}
	days, err := s.d.Summaries.Days(ctx, tenant, firstDay, lastDay, MaxStatsDays)
	if err != nil {
		return stats.Tenant{}, busy("read daily summary", err)
	}
	byMonth := make(map[month.Month]stats.MirrorMonth, len(sums))
	for _, m := range sums {
		byMonth[m.Month] = m
	}
	out := stats.Tenant{Totals: totals, Months: []stats.Month{}, Days: days}
	if out.Days == nil {
		out.Days = []stats.Day{}
	}
	for _, c := range catalog {
		m := byMonth[c.Month]
		inRange := (fromMonth == 0 || c.Month >= fromMonth) && (toMonth == 0 || c.Month <= toMonth)
		// A table written ahead of the calendar (the month advanced early) holds messages of the
		// range although its name lies after it.
		if !inRange && !holdsDays(m, firstDay, lastDay) {
			continue
		}
		out.Months = append(out.Months, stats.Month{
			Month: c.Month, Table: c.Table, State: c.State,
			Messages: m.Messages, Topics: m.Topics, GroupTopics: m.GroupTopics, P2PTopics: m.Topics - m.GroupTopics,
			FirstAt: m.FirstAt, LastAt: m.LastAt,
		})
	}
	return out, nil
}

// statsMonths checks the bounds and returns the months they fall in (0 for an open side).
func statsMonths(from, to time.Time) (month.Month, month.Month, error) {
	bad := apperr.New(apperr.InvalidArgument, "from and to must be dates of years 2000–2999, from ≤ to")
	var fromMonth, toMonth month.Month
	if !from.IsZero() {
		if fromMonth = month.Of(from); !fromMonth.Valid() {
			return 0, 0, bad
		}
	}
	if !to.IsZero() {
		if toMonth = month.Of(to); !toMonth.Valid() {
			return 0, 0, bad
		}
	}
	if !from.IsZero() && !to.IsZero() && stats.DayOf(from).After(stats.DayOf(to)) {
		return 0, 0, bad
	}
	return fromMonth, toMonth, nil
}

// holdsDays reports whether a month's messages were created on the days first…last.
func holdsDays(m stats.MirrorMonth, first, last time.Time) bool {
	return !m.FirstAt.IsZero() && !m.LastAt.Before(first) && m.FirstAt.Before(last.AddDate(0, 0, 1))
}
