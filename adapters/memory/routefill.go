package memory

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

var _ ports.RouteFiller = (*RouteCache)(nil)

// ReplaceIfMissing writes r only when the topic has no cached route, checked and written under
// one lock like the Redis script.
func (c *RouteCache) ReplaceIfMissing(_ context.Context, name, topicName string, r route.Route) (bool, error) {
	tk, err := validTenantTopic(name, topicName)
	if err != nil {
		return false, fmt.Errorf("fill route: %w", err)
	}
	if len(r) == 0 {
		return false, nil
	}
	if err := r.Validate(); err != nil {
		return false, fmt.Errorf("fill route of %s: %w", topicName, err)
	}
	segs := make([]route.Segment, 0, len(r))
	for _, s := range r {
		segs = append(segs, truncateTimes(s))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.routes[tk]; ok {
		return false, nil
	}
	c.routes[tk] = route.Normalize(segs)
	return true, nil
}
