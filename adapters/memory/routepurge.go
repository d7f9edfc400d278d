package memory

import (
	"context"
	"slices"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

var _ ports.RoutePurger = (*RouteCache)(nil)

// RemoveMonth drops one month's segment from a cached route; a route left empty goes, as the
// Redis keys do.
func (c *RouteCache) RemoveMonth(_ context.Context, name, topicName string, m month.Month) error {
	tk, err := validTenantTopic(name, topicName)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := slices.DeleteFunc(slices.Clone(c.routes[tk]), func(s route.Segment) bool { return s.Month == m })
	if len(r) == 0 {
		delete(c.routes, tk)
		return nil
	}
	c.routes[tk] = r
	return nil
}
