package routerepair

import (
	"context"
	"errors"
	"fmt"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
)

// Report is what one reconciliation of a tenant found.
type Report struct {
	Sampled    int // topics compared
	Deep       int // of which were also compared with the month tables
	Missing    int // Redis had no route
	Stale      int // Redis routed fewer seqs than the mirror holds
	Mismatched int // Redis routed seqs the mirror does not hold, or could not be read
	Recounted  int // mirror segments rewritten from the month tables
	Failed     int // topics whose check or repair failed
}

// Reconcile samples topics of the recent months from the mirror and compares each topic's
// Redis route with the mirror, and, for the first ReconcileDeep of them, the mirror with the
// month tables (seed 000 §3.4 rule 4). Whatever differs is repaired: the mirror from the
// tables, Redis from the mirror. Each pass continues where the last one stopped, so over time
// every topic of those months is compared, using index ranges only.
func (s *Service) Reconcile(ctx context.Context, tenant string) (Report, error) {
	months, err := s.recentMonths(ctx, tenant)
	if err != nil {
		return Report{}, err
	}
	topics, err := s.sample(ctx, tenant, months)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	var errs error
	for i, t := range topics {
		rep.Sampled++
		if i < s.cfg.ReconcileDeep {
			rep.Deep++
			n, err := s.auditTables(ctx, tenant, t, months)
			rep.Recounted += n
			if err != nil {
				rep.Failed++
				errs = errors.Join(errs, err)
				s.d.Metrics.Inc("group_message_route_reconcile_total", "failed")
				continue
			}
		}
		result, err := s.checkRoute(ctx, tenant, t)
		s.d.Metrics.Inc("group_message_route_reconcile_total", result)
		switch result {
		case resultMissing:
			rep.Missing++
		case resultStale:
			rep.Stale++
		case resultMismatch:
			rep.Mismatched++
		case resultFailed:
			rep.Failed++
			errs = errors.Join(errs, err)
		}
	}
	if rep.Missing+rep.Stale+rep.Mismatched+rep.Recounted+rep.Failed > 0 {
		s.d.Log.WarnContext(ctx, "route reconciliation found differences", "tenant", tenant,
			"sampled", rep.Sampled, "deep", rep.Deep, "missing", rep.Missing, "stale", rep.Stale,
			"mismatched", rep.Mismatched, "recounted", rep.Recounted, "failed", rep.Failed)
	}
	return rep, errs
}

// recentMonths are the active month and the ReconcileMonths-1 months before it.
func (s *Service) recentMonths(ctx context.Context, tenant string) ([]month.Month, error) {
	active, found, err := s.d.Months.Active(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("reconcile %s: active month: %w", tenant, err)
	}
	if !found {
		now, err := s.d.Months.Now(ctx)
		if err != nil {
			return nil, fmt.Errorf("reconcile %s: redis time: %w", tenant, err)
		}
		active = month.Of(now)
	}
	out := make([]month.Month, s.cfg.ReconcileMonths)
	for i := range out {
		out[i] = active.Add(-i)
	}
	return out, nil
}

// sample takes the next topics of each month after its cursor, wrapping to the start when a
// month's topics run out, and de-duplicates topics found in several months.
func (s *Service) sample(ctx context.Context, tenant string, months []month.Month) ([]string, error) {
	topics, err := s.cursors.Next(ctx, tenant, months, s.cfg.ReconcileSample, func(ctx context.Context, m month.Month, after string, limit int) ([]string, error) {
		return s.d.Mirror.TopicsIn(ctx, tenant, m, after, limit)
	})
	if err != nil {
		return nil, fmt.Errorf("reconcile %s: %w", tenant, err)
	}
	return topics, nil
}

// Results of one route check, the values of group_message_route_reconcile_total{result}.
const (
	resultOK       = "ok"
	resultMissing  = "missing"
	resultStale    = "stale"
	resultMismatch = "mismatch"
	resultFailed   = "failed"
)

// checkRoute compares the topic's Redis route with the mirror and rebuilds it when they
// differ. Redis is read first: it only ever reflects committed batches, so a later mirror read
// holds everything it routes, and a Redis route wider than the mirror is a real fault, not a
// race. A narrower one may be a route update still in flight; rebuilding it is harmless.
func (s *Service) checkRoute(ctx context.Context, tenant, topic string) (string, error) {
	cached, found, cacheErr := s.d.Routes.Segments(ctx, tenant, topic)
	mirror, err := s.d.Store.Segments(ctx, tenant, topic)
	if err != nil {
		return resultFailed, fmt.Errorf("reconcile %s: mirror: %w", topic, err)
	}
	result := resultOK
	switch {
	case cacheErr != nil:
		// A damaged key (say, of the wrong type) reads as an error; the rebuild replaces it.
		s.d.Log.WarnContext(ctx, "unreadable route", "tenant", tenant, "topic", topic, "err", cacheErr)
		result = resultMismatch
	case !found && len(mirror) > 0:
		result = resultMissing
	case found && !mirror.Covers(cached): // the cache routes a seq the mirror does not hold
		result = resultMismatch
	case !covers(cached, found, mirror):
		result = resultStale
	}
	if result == resultOK {
		return result, nil
	}
	if _, err := s.Rebuild(ctx, tenant, topic); err != nil {
		return resultFailed, fmt.Errorf("reconcile %s: %w", topic, err)
	}
	return result, nil
}

// segmentOf is r's segment of want's month.
func segmentOf(r route.Route, want route.Segment) (route.Segment, bool) {
	for _, s := range r {
		if s.Month == want.Month {
			return s, true
		}
	}
	return route.Segment{}, false
}

// auditTables compares the topic's mirror segments of months with the month tables and
// recounts a segment that differs twice in a row: a batch committing between the two reads
// makes one comparison differ, rarely two. It returns how many segments it recounted.
func (s *Service) auditTables(ctx context.Context, tenant, topic string, months []month.Month) (int, error) {
	recounted := 0
	for _, m := range months {
		same, err := s.tableMatchesMirror(ctx, tenant, topic, m)
		if err == nil && !same {
			same, err = s.tableMatchesMirror(ctx, tenant, topic, m)
		}
		if err != nil {
			return recounted, err
		}
		if same {
			continue
		}
		seg, found, err := s.d.Mirror.Recount(ctx, tenant, m, topic)
		if err != nil {
			return recounted, fmt.Errorf("reconcile %s: %w", topic, err)
		}
		recounted++
		s.d.Metrics.Inc("group_message_route_reconcile_total", "recounted")
		s.d.Log.WarnContext(ctx, "route mirror differed from the month table and was recounted",
			"tenant", tenant, "topic", topic, "month", m.String(), "found", found,
			"min_seq", seg.MinSeq, "max_seq", seg.MaxSeq, "count", seg.Count)
	}
	return recounted, nil
}

func (s *Service) tableMatchesMirror(ctx context.Context, tenant, topic string, m month.Month) (bool, error) {
	table, inTable, err := s.d.Mirror.TableSegment(ctx, tenant, m, topic)
	if errors.Is(err, shard.ErrMonthMissing) {
		// A month before the tenant's first table: nothing can be stored there.
		inTable, err = false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reconcile %s: table of %s: %w", topic, m, err)
	}
	mirror, err := s.d.Store.Segments(ctx, tenant, topic)
	if err != nil {
		return false, fmt.Errorf("reconcile %s: mirror: %w", topic, err)
	}
	seg, inMirror := segmentOf(mirror, route.Segment{Month: m})
	if inTable != inMirror {
		return false, nil
	}
	return !inTable || (seg.MinSeq == table.MinSeq && seg.MaxSeq == table.MaxSeq && seg.Count == table.Count), nil
}
