package routerepair

import (
	"context"
	"errors"
	"fmt"

	"github.com/imdhq/imd/core/domain/route"
)

// rebuildAttempts bounds the retries of a rebuild that keeps racing concurrent writes.
const rebuildAttempts = 3

// errRacing: the topic kept receiving writes while its route was rebuilt; a later pass retries.
var errRacing = errors.New("writes kept racing the rebuild")

// Rebuild writes the topic's route from the MySQL mirror to Redis and checks it stuck.
//
// A plain read-then-replace can lose a batch that commits after the mirror read and updates
// Redis before the replace. So after replacing, the mirror is read again and then the Redis
// route: every batch committed by then is in the second read, and its own route update either
// came after the replace (and merged into it) or is missing, which the check sees. Batches
// committing later update Redis themselves.
func (s *Service) Rebuild(ctx context.Context, tenant, topic string) (route.Route, error) {
	rt, err := s.rebuild(ctx, tenant, topic)
	if err != nil {
		s.d.Metrics.Inc("group_message_route_rebuild_total", "failed")
		return nil, err
	}
	s.d.Metrics.Inc("group_message_route_rebuild_total", "ok")
	return rt, nil
}

func (s *Service) rebuild(ctx context.Context, tenant, topic string) (route.Route, error) {
	for range rebuildAttempts {
		mirror, err := s.d.Store.Segments(ctx, tenant, topic)
		if err != nil {
			return nil, fmt.Errorf("rebuild route of %s: read mirror: %w", topic, err)
		}
		if err := s.d.Routes.Replace(ctx, tenant, topic, mirror); err != nil {
			return nil, fmt.Errorf("rebuild route of %s: %w", topic, err)
		}
		after, err := s.d.Store.Segments(ctx, tenant, topic)
		if err != nil {
			return nil, fmt.Errorf("rebuild route of %s: read mirror again: %w", topic, err)
		}
		cached, found, err := s.d.Routes.Segments(ctx, tenant, topic)
		if err != nil {
			return nil, fmt.Errorf("rebuild route of %s: read back: %w", topic, err)
		}
		if covers(cached, found, after) {
			return cached, nil
		}
	}
	return nil, fmt.Errorf("rebuild route of %s: %w (%d attempts)", topic, errRacing, rebuildAttempts)
}

// covers reports whether the cached route routes every seq of the mirror to its month (and a
// topic the mirror does not know has no cached route either).
func covers(cached route.Route, found bool, mirror route.Route) bool {
	if len(mirror) == 0 {
		return !found
	}
	return found && cached.Covers(mirror)
}

// RebuildTenant rebuilds the route of every topic in the tenant's mirror, a page at a time,
// and returns how many it rebuilt. A topic whose writes raced the rebuild is queued for the
// repair loop; any other failure stops the walk, since it usually means Redis or MySQL is
// down and every other topic would fail too.
func (s *Service) RebuildTenant(ctx context.Context, tenant string) (int, error) {
	n := 0
	after := ""
	for {
		topics, err := s.d.Mirror.Topics(ctx, tenant, after, s.cfg.RebuildBatch)
		if err != nil {
			return n, fmt.Errorf("rebuild routes of %s: list topics after %q: %w", tenant, after, err)
		}
		for _, t := range topics {
			_, err := s.Rebuild(ctx, tenant, t)
			if errors.Is(err, errRacing) {
				err = s.Enqueue(ctx, tenant, t)
			}
			if err != nil {
				return n, fmt.Errorf("rebuild routes of %s: %w", tenant, err)
			}
			n++
		}
		if len(topics) < s.cfg.RebuildBatch {
			return n, nil
		}
		after = topics[len(topics)-1]
	}
}

// RebuildAll is the operator's tenant-wide rebuild: it rebuilds every route and records that
// the tenant's routes are built.
func (s *Service) RebuildAll(ctx context.Context, tenant string) (int, error) {
	n, err := s.RebuildTenant(ctx, tenant)
	if err != nil {
		return n, err
	}
	if err := s.d.Queue.MarkRoutesBuilt(ctx, tenant); err != nil {
		return n, fmt.Errorf("rebuild routes of %s: %w", tenant, err)
	}
	s.d.Log.InfoContext(ctx, "tenant routes rebuilt from the mirror", "tenant", tenant, "topics", n)
	return n, nil
}

// EnsureRoutes rebuilds the tenant's routes when Redis lost them: the routes_built marker goes
// with them (FLUSHALL, a new Redis), so checking it is one cheap read per pass (seed 000 §3.4
// rule 4).
func (s *Service) EnsureRoutes(ctx context.Context, tenant string) error {
	built, err := s.d.Queue.RoutesBuilt(ctx, tenant)
	if err != nil {
		return fmt.Errorf("routes built marker of %s: %w", tenant, err)
	}
	if built {
		return nil
	}
	_, err = s.RebuildAll(ctx, tenant)
	return err
}
