package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

var _ ports.DeliverLeases = (*DeliverQueue)(nil)

type deliverLease struct {
	node  string
	until time.Time
}

// Hold implements ports.DeliverLeases like the Redis script: renew, or take a free lease, an
// expired one or one of an earlier instance of the same node_id, moving the partition's
// processing list back to the head of its queue.
func (q *DeliverQueue) Hold(_ context.Context, name string, partition int, node string, ttl time.Duration) (held, fresh bool, err error) {
	p, err := q.leaseKey(name, partition, node)
	if err != nil {
		return false, false, fmt.Errorf("hold deliver lease: %w", err)
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(name)
	now := q.clock()
	cur, ok := l.leases[p]
	if ok && now.Before(cur.until) {
		if cur.node == node {
			l.leases[p] = deliverLease{node, now.Add(ttl)}
			return true, false, nil
		}
		if !strings.HasPrefix(cur.node, presence.NodeID(node)+"-") {
			return false, false, nil
		}
	}
	l.leases[p] = deliverLease{node, now.Add(ttl)}
	l.queues[p] = append(l.processing[p], l.queues[p]...)
	delete(l.processing, p)
	q.s.wake()
	return true, true, nil
}

// Release implements ports.DeliverLeases.
func (q *DeliverQueue) Release(_ context.Context, name string, partition int, node string) error {
	p, err := q.leaseKey(name, partition, node)
	if err != nil {
		return fmt.Errorf("release deliver lease: %w", err)
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(name)
	if l.leases[p].node == node {
		delete(l.leases, p)
	}
	return nil
}

func (q *DeliverQueue) leaseKey(name string, partition int, node string) (partitionKey, error) {
	if !tenant.Valid(name) || !presence.ValidNode(node) {
		return partitionKey{}, fmt.Errorf("invalid tenant %q or node %q", name, node)
	}
	if partition < 0 || partition >= q.partitions {
		return partitionKey{}, fmt.Errorf("partition %d of %d", partition, q.partitions)
	}
	return partitionKey{partition, q.partitions}, nil
}

var _ ports.DeliverLeaseHolders = (*DeliverQueue)(nil)

// Holders implements ports.DeliverLeaseHolders.
func (q *DeliverQueue) Holders(_ context.Context, name string) ([]string, error) {
	if !tenant.Valid(name) {
		return nil, fmt.Errorf("read deliver lease holders: invalid tenant %q", name)
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(name)
	now := q.clock()
	out := make([]string, q.partitions)
	for i := range out {
		if cur, ok := l.leases[partitionKey{i, q.partitions}]; ok && now.Before(cur.until) {
			out[i] = cur.node
		}
	}
	return out, nil
}
