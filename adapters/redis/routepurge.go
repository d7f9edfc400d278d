package redis

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

var _ ports.RoutePurger = (*RouteCache)(nil)

// removeMonthScript drops one month from a topic's route ZSET and route_meta HASH together,
// so no reader sees one without the other. KEYS: route, route_meta. ARGV: YYYYMM.
var removeMonthScript = rueidis.NewLuaScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
`)

// RemoveMonth removes month m's segment from the topic's route (seed 000 §3.3 rule 5: routes
// are cleaned only when the retention policy ends a month). Redis deletes a key left empty.
func (c *RouteCache) RemoveMonth(ctx context.Context, tenant, topic string, m month.Month) error {
	k, err := topicKeys(tenant, topic)
	if err != nil {
		return fmt.Errorf("remove route month: %w", err)
	}
	if err := removeMonthScript.Exec(ctx, c.c, []string{k.Route(topic), k.RouteMeta(topic)}, []string{m.String()}).Error(); err != nil {
		return fmt.Errorf("remove %s from the route of %s in %s: %w", m, topic, tenant, err)
	}
	return nil
}
