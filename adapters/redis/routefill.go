package redis

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

var _ ports.RouteFiller = (*RouteCache)(nil)

// fillScript is replaceScript guarded by "no route yet", checked and written in one script so
// no other rebuild or Apply can slip in between. A ZSET without its HASH (a partial loss that
// Segments reports as not found) counts as missing too.
// KEYS: route, route_meta. ARGV: month, min_seq, meta per segment. Returns 1 when written.
var fillScript = rueidis.NewLuaScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  local months = redis.call('ZRANGE', KEYS[1], 0, -1)
  local whole = true
  for _, m in ipairs(months) do
    if redis.call('HEXISTS', KEYS[2], m) == 0 then whole = false end
  end
  if whole then return 0 end
end
redis.call('DEL', KEYS[1], KEYS[2])
for i = 1, #ARGV, 3 do
  redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i])
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
end
return 1
`)

// ReplaceIfMissing writes r only when the topic has no usable route (see ports.RouteFiller).
func (c *RouteCache) ReplaceIfMissing(ctx context.Context, tenant, topic string, r route.Route) (bool, error) {
	k, err := topicKeys(tenant, topic)
	if err != nil {
		return false, fmt.Errorf("fill route: %w", err)
	}
	if len(r) == 0 {
		return false, nil
	}
	if err := r.Validate(); err != nil {
		return false, fmt.Errorf("fill route of %s: %w", topic, err)
	}
	args := make([]string, 0, 3*len(r))
	for _, s := range r {
		args = append(args, s.Month.String(), itoa(s.MinSeq), encodeMeta(s))
	}
	n, err := fillScript.Exec(ctx, c.c, []string{k.Route(topic), k.RouteMeta(topic)}, args).AsInt64()
	if err != nil {
		return false, fmt.Errorf("fill route of %s in %s: %w", topic, tenant, err)
	}
	return n == 1, nil
}
