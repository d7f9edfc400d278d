package redis

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports"
)

// RepairQueue is ports.RouteRepairQueue: a HASH topic → ticket version per tenant, so a topic
// queued many times waits once, and the routes_built marker.
type RepairQueue struct {
	c rueidis.Client
}

var _ ports.RouteRepairQueue = (*RepairQueue)(nil)

// NewRepairQueue returns the repair queue on c.
func NewRepairQueue(c rueidis.Client) *RepairQueue { return &RepairQueue{c: c} }

// addRepairScript gives the topic a fresh, tenant-unique version. KEYS: route_repair,
// route_repair_version. ARGV: topic.
var addRepairScript = rueidis.NewLuaScript(`
local v = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], v)
return v
`)

// Add queues the topic, or renews its pending ticket.
func (q *RepairQueue) Add(ctx context.Context, tenant, topicName string) error {
	k, err := keysForTopic(tenant, topicName)
	if err != nil {
		return fmt.Errorf("queue route repair: %w", err)
	}
	if err := addRepairScript.Exec(ctx, q.c, []string{k.RouteRepair(), k.RouteRepairVersion()}, []string{topicName}).Error(); err != nil {
		return fmt.Errorf("queue route repair of %s in %s: %w", topicName, tenant, err)
	}
	return nil
}

// pendingScript samples tickets at random, so a topic whose rebuild keeps failing cannot
// starve the others. Inside Lua the reply is the flat RESP2 form {topic, version, …}.
// KEYS: route_repair. ARGV: limit.
var pendingScript = rueidis.NewLuaScript(`
return redis.call('HRANDFIELD', KEYS[1], ARGV[1], 'WITHVALUES')
`)

// Pending returns up to limit waiting tickets.
func (q *RepairQueue) Pending(ctx context.Context, tenant string, limit int) ([]ports.RepairTicket, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("pending route repairs: %w", err)
	}
	if limit <= 0 {
		return nil, nil
	}
	flat, err := pendingScript.Exec(ctx, q.c, []string{k.RouteRepair()}, []string{strconv.Itoa(limit)}).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("pending route repairs of %s: %w", tenant, err)
	}
	out := make([]ports.RepairTicket, 0, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		v, err := strconv.ParseInt(flat[i+1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("route repair ticket of %s in %s: %w", flat[i], tenant, err)
		}
		out = append(out, ports.RepairTicket{Topic: flat[i], Version: v})
	}
	return out, nil
}

// doneScript deletes the ticket only if its version is unchanged. KEYS: route_repair.
// ARGV: topic, version.
var doneScript = rueidis.NewLuaScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
`)

// Done removes the ticket unless the topic was queued again since. The topic is a HASH field,
// never part of a key, so a damaged entry can be removed too.
func (q *RepairQueue) Done(ctx context.Context, tenant string, t ports.RepairTicket) error {
	k, err := KeysOf(tenant)
	if err != nil {
		return fmt.Errorf("finish route repair: %w", err)
	}
	args := []string{t.Topic, strconv.FormatInt(t.Version, 10)}
	if err := doneScript.Exec(ctx, q.c, []string{k.RouteRepair()}, args).Error(); err != nil {
		return fmt.Errorf("finish route repair of %s in %s: %w", t.Topic, tenant, err)
	}
	return nil
}

// Len is the number of topics waiting.
func (q *RepairQueue) Len(ctx context.Context, tenant string) (int64, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return 0, fmt.Errorf("route repair backlog: %w", err)
	}
	n, err := q.c.Do(ctx, q.c.B().Hlen().Key(k.RouteRepair()).Build()).AsInt64()
	if err != nil {
		return 0, fmt.Errorf("route repair backlog of %s: %w", tenant, err)
	}
	return n, nil
}

// RoutesBuilt reports whether the routes_built marker is set.
func (q *RepairQueue) RoutesBuilt(ctx context.Context, tenant string) (bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return false, fmt.Errorf("routes built marker: %w", err)
	}
	n, err := q.c.Do(ctx, q.c.B().Exists().Key(k.RoutesBuilt()).Build()).AsInt64()
	if err != nil {
		return false, fmt.Errorf("routes built marker of %s: %w", tenant, err)
	}
	return n == 1, nil
}

// MarkRoutesBuilt sets the marker, without TTL: it must live exactly as long as the routes.
func (q *RepairQueue) MarkRoutesBuilt(ctx context.Context, tenant string) error {
	k, err := KeysOf(tenant)
	if err != nil {
		return fmt.Errorf("mark routes built: %w", err)
	}
	if err := q.c.Do(ctx, q.c.B().Set().Key(k.RoutesBuilt()).Value("1").Build()).Error(); err != nil {
		return fmt.Errorf("mark routes built in %s: %w", tenant, err)
	}
	return nil
}
