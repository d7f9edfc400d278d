package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

// RouteCache is ports.RouteCache: per topic a route ZSET (member YYYYMM, score min seq) and a
// route_meta HASH (YYYYMM → "min_seq,max_seq,count,min_created_ms,max_created_ms"), no TTL
// (seed 000 §3.3). The ZSET orders months; the HASH holds the exact int64 bounds, since a ZSET
// score is a double.
type RouteCache struct {
	c rueidis.Client
}

var _ ports.RouteCache = (*RouteCache)(nil)

// NewRouteCache returns the route cache on c.
func NewRouteCache(c rueidis.Client) *RouteCache { return &RouteCache{c: c} }

// segmentsScript returns a flat {month, meta, month, meta, …} in ZSET order, meta empty when the
// HASH lacks the month. Reading both keys in one script gives a consistent snapshot.
// KEYS: route, route_meta.
var segmentsScript = rueidis.NewLuaScript(`
local months = redis.call('ZRANGE', KEYS[1], 0, -1)
local out = {}
for i, m in ipairs(months) do
  out[2 * i - 1] = m
  out[2 * i] = redis.call('HGET', KEYS[2], m) or ''
end
return out
`)

// Segments returns the cached route. A route whose ZSET lists a month the HASH lacks (a
// partial eviction) counts as not found, so the caller rebuilds it from the MySQL mirror
// instead of trusting a route with holes.
func (c *RouteCache) Segments(ctx context.Context, tenant, topic string) (route.Route, bool, error) {
	k, err := topicKeys(tenant, topic)
	if err != nil {
		return nil, false, fmt.Errorf("route segments: %w", err)
	}
	flat, err := segmentsScript.Exec(ctx, c.c, []string{k.Route(topic), k.RouteMeta(topic)}, nil).AsStrSlice()
	if err != nil {
		return nil, false, fmt.Errorf("route of %s in %s: %w", topic, tenant, err)
	}
	if len(flat) == 0 || len(flat)%2 != 0 {
		return nil, false, nil
	}
	segs := make([]route.Segment, 0, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		if flat[i+1] == "" {
			return nil, false, nil
		}
		seg, err := decodeMeta(flat[i], flat[i+1])
		if err != nil {
			return nil, false, fmt.Errorf("route of %s in %s: %w", topic, tenant, err)
		}
		segs = append(segs, seg)
	}
	return route.Normalize(segs), true, nil
}

// applyScript merges updates into routes that exist. A topic without a route is left alone:
// creating one from a single update would hide the topic's older months from readers, while a
// missing route makes them rebuild the whole route from the MySQL mirror (seed 000 §3.4).
// KEYS: route, route_meta per update. ARGV: routeUpdateArgs per update.
var applyScript = newBatchScript(luaDecLess + luaApplyRoute + `
for i = 1, #KEYS / 2 do
  local a = 6 * (i - 1)
  apply_route(KEYS[2 * i - 1], KEYS[2 * i], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6])
end
return redis.status_reply('OK')
`)

// Apply merges committed ranges into the cached routes, one script call per slot group the
// topics lie in (DESIGN §11), sent in one pipeline. Topics without a cached route are skipped
// (see applyScript).
func (c *RouteCache) Apply(ctx context.Context, tenant string, updates []ports.RouteUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	var execs []rueidis.LuaExec
	byTag := map[string]int{}
	for _, u := range updates {
		k, a, err := routeUpdateArgs(tenant, u)
		if err != nil {
			return err
		}
		tag := hashTag(k[0])
		i, ok := byTag[tag]
		if !ok {
			i, byTag[tag] = len(execs), len(execs)
			execs = append(execs, rueidis.LuaExec{})
		}
		execs[i].Keys, execs[i].Args = append(execs[i].Keys, k...), append(execs[i].Args, a...)
	}
	for _, r := range applyScript.ExecBatch(ctx, c.c, execs) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("apply %d route updates in %s: %w", len(updates), tenant, err)
		}
	}
	return nil
}

// routeUpdateArgs validates one update and returns what apply_route (luaApplyRoute) takes: the
// keys route and route_meta, and month, min_seq, max_seq, count, min_created_ms and
// max_created_ms, the times 0 when unknown.
func routeUpdateArgs(tenant string, u ports.RouteUpdate) (keys, args []string, err error) {
	k, err := topicKeys(tenant, u.Topic)
	if err != nil {
		return nil, nil, fmt.Errorf("apply route: %w", err)
	}
	if err := u.Segment.Validate(); err != nil {
		return nil, nil, fmt.Errorf("apply route of %s: %w", u.Topic, err)
	}
	s := u.Segment
	return []string{k.Route(u.Topic), k.RouteMeta(u.Topic)}, []string{s.Month.String(), itoa(s.MinSeq), itoa(s.MaxSeq), itoa(s.Count),
		itoa(unixMilli(s.MinCreatedAt)), itoa(unixMilli(s.MaxCreatedAt))}, nil
}

// replaceScript swaps a topic's route atomically, so readers never see half of it.
// KEYS: route, route_meta. ARGV: month, min_seq, meta per segment.
var replaceScript = rueidis.NewLuaScript(`
redis.call('DEL', KEYS[1], KEYS[2])
for i = 1, #ARGV, 3 do
  redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i])
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
end
return redis.status_reply('OK')
`)

// Replace overwrites the topic's route with r; an empty r deletes it.
func (c *RouteCache) Replace(ctx context.Context, tenant, topic string, r route.Route) error {
	k, err := topicKeys(tenant, topic)
	if err != nil {
		return fmt.Errorf("replace route: %w", err)
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("replace route of %s: %w", topic, err)
	}
	args := make([]string, 0, 3*len(r))
	for _, s := range r {
		args = append(args, s.Month.String(), itoa(s.MinSeq), encodeMeta(s))
	}
	if err := replaceScript.Exec(ctx, c.c, []string{k.Route(topic), k.RouteMeta(topic)}, args).Error(); err != nil {
		return fmt.Errorf("replace route of %s in %s: %w", topic, tenant, err)
	}
	return nil
}

func encodeMeta(s route.Segment) string {
	return strings.Join([]string{itoa(s.MinSeq), itoa(s.MaxSeq), itoa(s.Count),
		itoa(unixMilli(s.MinCreatedAt)), itoa(unixMilli(s.MaxCreatedAt))}, ",")
}

func decodeMeta(m, meta string) (route.Segment, error) {
	mo, err := month.Parse(m)
	if err != nil {
		return route.Segment{}, fmt.Errorf("route month: %w", err)
	}
	f := strings.Split(meta, ",")
	if len(f) != 5 {
		return route.Segment{}, fmt.Errorf("route meta of %s: %q has %d fields, want 5", m, meta, len(f))
	}
	var v [5]int64
	for i, s := range f {
		if v[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return route.Segment{}, fmt.Errorf("route meta of %s: %q: %w", m, meta, err)
		}
	}
	return route.Segment{
		Month: mo, MinSeq: v[0], MaxSeq: v[1], Count: v[2],
		MinCreatedAt: fromUnixMilli(v[3]), MaxCreatedAt: fromUnixMilli(v[4]),
	}, nil
}

// unixMilli encodes an unknown (zero) time as 0, which the merge in applyScript skips.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromUnixMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
