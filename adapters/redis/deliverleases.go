package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/ports"
)

var _ ports.DeliverLeases = (*DeliverQueue)(nil)

// holdScript renews KEYS[1] for ARGV[1] (1), or takes it when free or held by an earlier
// instance of the same node_id (prefix ARGV[3]) and moves the partition's processing list
// KEYS[2] back to the head of its queue KEYS[3], oldest first (2); 0 when another node holds
// it. Taking and requeueing are one step, so no job of the previous owner is left behind.
var holdScript = rueidis.NewLuaScript(`
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if cur and string.sub(cur, 1, #ARGV[3]) ~= ARGV[3] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
while redis.call('LMOVE', KEYS[2], KEYS[3], 'RIGHT', 'LEFT') do end
return 2
`)

// Hold implements ports.DeliverLeases.
func (q *DeliverQueue) Hold(ctx context.Context, tenant string, partition int, node string, ttl time.Duration) (held, fresh bool, err error) {
	k, err := q.leaseKeys(tenant, partition, node)
	if err != nil {
		return false, false, fmt.Errorf("hold deliver lease: %w", err)
	}
	n, err := holdScript.Exec(ctx, q.c,
		[]string{k.DeliverLease(partition, q.partitions), k.DeliverProcessingOf(partition, q.partitions), k.DeliverQueueOf(partition, q.partitions)},
		[]string{node, strconv.FormatInt(max(ttl.Milliseconds(), 1), 10), presence.NodeID(node) + "-"}).AsInt64()
	if err != nil {
		return false, false, fmt.Errorf("hold deliver lease %d of %s: %w", partition, tenant, err)
	}
	return n > 0, n == 2, nil
}

// releaseLeaseScript deletes KEYS[1] if ARGV[1] holds it.
var releaseLeaseScript = rueidis.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Release implements ports.DeliverLeases.
func (q *DeliverQueue) Release(ctx context.Context, tenant string, partition int, node string) error {
	k, err := q.leaseKeys(tenant, partition, node)
	if err != nil {
		return fmt.Errorf("release deliver lease: %w", err)
	}
	if err := releaseLeaseScript.Exec(ctx, q.c, []string{k.DeliverLease(partition, q.partitions)}, []string{node}).Error(); err != nil {
		return fmt.Errorf("release deliver lease %d of %s: %w", partition, tenant, err)
	}
	return nil
}

func (q *DeliverQueue) leaseKeys(tenant string, partition int, node string) (Keys, error) {
	k, err := nodeKeys(tenant, node)
	if err != nil {
		return Keys{}, err
	}
	if partition < 0 || partition >= q.partitions {
		return Keys{}, fmt.Errorf("partition %d of %d", partition, q.partitions)
	}
	return k, nil
}

var _ ports.DeliverLeaseHolders = (*DeliverQueue)(nil)

// Holders implements ports.DeliverLeaseHolders with a GET per partition in one round trip: the
// leases live in their partitions' slot groups (DESIGN §11), and an expired lease is gone with
// its key.
func (q *DeliverQueue) Holders(ctx context.Context, tenant string) ([]string, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("read deliver lease holders: %w", err)
	}
	cmds := make(rueidis.Commands, q.partitions)
	for i := range cmds {
		cmds[i] = q.c.B().Get().Key(k.DeliverLease(i, q.partitions)).Build()
	}
	out := make([]string, q.partitions)
	for i, r := range q.c.DoMulti(ctx, cmds...) {
		s, err := r.ToString()
		switch {
		case rueidis.IsRedisNil(err):
		case err != nil:
			return nil, fmt.Errorf("read deliver lease holder %d of %s: %w", i, tenant, err)
		default:
			out[i] = s
		}
	}
	return out, nil
}
