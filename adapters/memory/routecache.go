package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// RouteCache is an in-memory ports.RouteCache with the Redis adapter's rules: Apply only
// merges into routes that exist, and times keep millisecond precision.
type RouteCache struct {
	mu     sync.Mutex
	routes map[tenantTopic]route.Route
}

var _ ports.RouteCache = (*RouteCache)(nil)

// NewRouteCache returns an empty route cache.
func NewRouteCache() *RouteCache { return &RouteCache{routes: map[tenantTopic]route.Route{}} }

// Segments returns found=false when the topic has no cached route.
func (c *RouteCache) Segments(_ context.Context, name, topicName string) (route.Route, bool, error) {
	tk, err := validTenantTopic(name, topicName)
	if err != nil {
		return nil, false, fmt.Errorf("route segments: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.routes[tk]
	if !ok {
		return nil, false, nil
	}
	return route.Normalize(r), true, nil
}

// Apply merges updates into existing routes; a topic without a route stays without one, so
// readers rebuild it whole from the mirror.
func (c *RouteCache) Apply(_ context.Context, name string, updates []ports.RouteUpdate) error {
	if !tenant.Valid(name) {
		return fmt.Errorf("apply route: invalid tenant %q", name)
	}
	for _, u := range updates {
		if _, err := validTenantTopic(name, u.Topic); err != nil {
			return fmt.Errorf("apply route: %w", err)
		}
		if err := u.Segment.Validate(); err != nil {
			return fmt.Errorf("apply route of %s: %w", u.Topic, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range updates {
		tk := tenantTopic{tenant: name, topic: u.Topic}
		if r, ok := c.routes[tk]; ok {
			c.routes[tk] = r.Merge(truncateTimes(u.Segment))
		}
	}
	return nil
}

// Replace overwrites the topic's route; an empty r deletes it.
func (c *RouteCache) Replace(_ context.Context, name, topicName string, r route.Route) error {
	tk, err := validTenantTopic(name, topicName)
	if err != nil {
		return fmt.Errorf("replace route: %w", err)
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("replace route of %s: %w", topicName, err)
	}
	segs := make([]route.Segment, 0, len(r))
	for _, s := range r {
		segs = append(segs, truncateTimes(s))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(segs) == 0 {
		delete(c.routes, tk)
		return nil
	}
	c.routes[tk] = route.Normalize(segs)
	return nil
}

// truncateTimes keeps what Redis keeps: milliseconds, UTC.
func truncateTimes(s route.Segment) route.Segment {
	s.MinCreatedAt, s.MaxCreatedAt = routeMillis(s.MinCreatedAt), routeMillis(s.MaxCreatedAt)
	return s
}

func routeMillis(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}
