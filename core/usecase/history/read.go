package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
)

// page is one directional read of a topic: the need messages after cursor (ascending), or
// before it (descending; cursor 0 starts at the newest).
type page struct {
	*target
	viewer     int64 // hides the viewer's deleted ranges; 0 hides none
	cursor     int64 // exclusive
	need       int
	desc       bool
	tombstones bool // also return status deleted, as sync does so clients see no gap
}

// read answers a page from the hot cache when it covers the page whole, else from the month
// tables the route names (seed 000 §6.1).
func (s *Service) read(ctx context.Context, p page, rt route.Route, st *stats) ([]message.Message, error) {
	if msgs, ok := s.fromCache(ctx, p, rt); ok {
		st.cached = true
		return msgs, nil
	}
	routed := rt.Since(p.cursor)
	if p.desc {
		routed = rt.Before(p.cursor)
	}
	// Seqs a stale route does not know yet are above its newest seq; a backward page below
	// that cannot need them.
	pastRoute := !p.desc || p.cursor == 0 || p.cursor > rt.MaxSeq()+1
	pl, err := s.plan(ctx, p.target, rt, routed, p.desc, pastRoute)
	if err != nil {
		return nil, err
	}
	return s.fromTables(ctx, p, pl, st)
}

// fromTables reads the planned months in order until the page is full. Month ranges of a topic
// never overlap and grow with the month, so the first months read hold the page's nearest seqs.
func (s *Service) fromTables(ctx context.Context, p page, pl plan, st *stats) ([]message.Message, error) {
	var out []message.Message
	for _, m := range pl.months {
		q := message.PageQuery{
			Topic: p.topic, Limit: p.need - len(out), Desc: p.desc, Viewer: p.viewer, IncludeDeleted: p.tombstones,
		}
		if p.desc {
			q.Before = p.cursor
		} else {
			q.After = p.cursor
		}
		got, err := s.d.Store.Page(ctx, p.tenant, m, q)
		if err != nil && pl.speculative[m] && errors.Is(err, shard.ErrMonthMissing) {
			continue
		}
		st.touch(m)
		if err != nil {
			return nil, apperr.Wrap(apperr.Busy, "message storage unavailable", fmt.Errorf("page %s of %s: %w", m, p.topic, err))
		}
		out = merge(out, got, p.desc)
		if len(out) >= p.need {
			break
		}
	}
	return out[:min(len(out), p.need)], nil
}

// plan is the month tables a read may touch, in reading order. Speculative months are read
// although no route segment names them, in case the route missed them; they may be absent from
// the catalog and are then skipped, while a routed month whose table is gone is an error.
type plan struct {
	months      []month.Month
	speculative map[month.Month]bool
}

// plan adds to the routed months what a stale route may hide, bounded by the active month
// (never a scan of all tables, seed 000 §6.4):
//   - with a route, when the read may need seqs past the route's newest (pastRoute): that
//     newest month itself, since a route update that failed after COMMIT must not hide the
//     newest messages, and, when the newest is older than the active month, the later months
//     the mirror routes (behindActive);
//   - with no route at all (neither Redis nor the mirror knows the topic): the active month and
//     the ones before it, RecentMonths in all.
func (s *Service) plan(ctx context.Context, tg *target, rt route.Route, routed []month.Month, newestFirst, pastRoute bool) (plan, error) {
	if len(rt) > 0 && !pastRoute {
		return plan{months: routed}, nil
	}
	active, found, err := s.d.Months.Active(ctx, tg.tenant)
	if err != nil {
		s.d.Log.WarnContext(ctx, "active month unavailable", "tenant", tg.tenant, "err", err)
	}
	pl := plan{months: slices.Clone(routed), speculative: make(map[month.Month]bool)}
	switch {
	case len(rt) == 0 && err != nil:
		return plan{}, apperr.Wrap(apperr.Busy, "month state unavailable", err)
	case err != nil || !found:
		return pl, nil
	case len(rt) == 0:
		for i := range s.d.RecentMonths {
			pl.speculative[active.Add(-i)] = true
		}
	default:
		var newest month.Month
		for _, seg := range rt {
			newest = max(newest, seg.Month)
		}
		if !slices.Contains(pl.months, newest) {
			pl.months = append(pl.months, newest)
		}
		if newest < active {
			s.behindActive(ctx, tg, rt, newest, active, &pl)
		}
	}
	for m := range pl.speculative {
		pl.months = append(pl.months, m)
	}
	slices.Sort(pl.months)
	pl.months = slices.Compact(pl.months)
	if newestFirst {
		slices.Reverse(pl.months)
	}
	return pl, nil
}

// behindActive adds the months after newest, the route's newest, that may hold the topic's
// newer seqs. The mirror names them: a Redis route can lag any number of months after a
// rollback to an old state (DESIGN §1.13), and one query of the mirror costs less than a query
// of each month table since newest. Where the mirror routes more than the cached route, that
// route is queued for a rebuild. Without the mirror, the months up to active are read on
// speculation, maxUnroutedMonths at most.
func (s *Service) behindActive(ctx context.Context, tg *target, rt route.Route, newest, active month.Month, pl *plan) {
	mirror, err := s.mirror(ctx, tg)
	if err != nil {
		s.d.Log.WarnContext(ctx, "route mirror unavailable, reading the months after the route on speculation", "topic", tg.topic, "err", err)
		for m := newest; m < active && len(pl.speculative) < maxUnroutedMonths; {
			m = m.Next()
			pl.speculative[m] = true
		}
		return
	}
	for _, seg := range mirror {
		if seg.Month > newest {
			pl.months = append(pl.months, seg.Month)
		}
	}
	if !rt.Covers(mirror) {
		s.d.Metrics.Inc("group_message_route_miss_total")
		s.d.Log.WarnContext(ctx, "redis route misses seqs the mirror routes, rebuilding it", "topic", tg.topic)
		s.requestRepair(ctx, tg.tenant, tg.topic)
	}
}

// maxUnroutedMonths bounds the months read past a route's newest segment.
const maxUnroutedMonths = 3

// stats is what one query reports (seed 000 §11): the month tables it read, and whether a
// page came from the hot cache.
type stats struct {
	start  time.Time
	months []month.Month
	cached bool
}

func newStats() *stats { return &stats{start: time.Now()} }

func (st *stats) touch(m month.Month) {
	if !slices.Contains(st.months, m) {
		st.months = append(st.months, m)
	}
}

// observe records group_message_query_tables (alerts fire above 3 tables) and
// group_message_query_latency by source.
func (s *Service) observe(st *stats) {
	source := "single_month"
	switch {
	case len(st.months) > 1:
		source = "cross_month"
	case len(st.months) == 0 && st.cached:
		source = "redis"
	}
	s.d.Metrics.Observe("group_message_query_tables", float64(len(st.months)))
	s.d.Metrics.Observe("group_message_query_latency", time.Since(st.start).Seconds(), source)
}

// merge merges two pages of one direction by seq, dropping duplicates.
func merge(a, b []message.Message, desc bool) []message.Message {
	out := append(a, b...)
	slices.SortFunc(out, func(x, y message.Message) int {
		if desc {
			return cmp.Compare(y.Seq, x.Seq)
		}
		return cmp.Compare(x.Seq, y.Seq)
	})
	return slices.CompactFunc(out, func(x, y message.Message) bool { return x.Seq == y.Seq })
}
