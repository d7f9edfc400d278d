package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// RepairQueue is an in-memory ports.RouteRepairQueue with the Redis adapter's rules: one
// ticket per topic, versions unique per tenant, Done only removes an unchanged ticket.
type RepairQueue struct {
	mu      sync.Mutex
	tenants map[string]*repairTickets
}

var _ ports.RouteRepairQueue = (*RepairQueue)(nil)

type repairTickets struct {
	version int64
	topics  map[string]int64
	built   bool
}

// NewRepairQueue returns an empty repair queue.
func NewRepairQueue() *RepairQueue { return &RepairQueue{tenants: map[string]*repairTickets{}} }

func (q *RepairQueue) of(name string) *repairTickets {
	return stateOf(q.tenants, name, func() *repairTickets { return &repairTickets{topics: map[string]int64{}} })
}

// Add queues the topic, or renews its ticket.
func (q *RepairQueue) Add(_ context.Context, name, topicName string) error {
	if _, err := validTenantTopic(name, topicName); err != nil {
		return fmt.Errorf("queue route repair: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.of(name)
	t.version++
	t.topics[topicName] = t.version
	return nil
}

// Pending returns up to limit tickets; map order stands in for HRANDFIELD's randomness.
func (q *RepairQueue) Pending(_ context.Context, name string, limit int) ([]ports.RepairTicket, error) {
	if !tenant.Valid(name) {
		return nil, fmt.Errorf("pending route repairs: invalid tenant %q", name)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []ports.RepairTicket
	for topicName, v := range q.of(name).topics {
		if len(out) >= limit {
			break
		}
		out = append(out, ports.RepairTicket{Topic: topicName, Version: v})
	}
	return out, nil
}

// Done removes the ticket unless it was renewed.
func (q *RepairQueue) Done(_ context.Context, name string, t ports.RepairTicket) error {
	if !tenant.Valid(name) {
		return fmt.Errorf("finish route repair: invalid tenant %q", name)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	topics := q.of(name).topics
	if topics[t.Topic] == t.Version {
		delete(topics, t.Topic)
	}
	return nil
}

// Len is the number of waiting topics.
func (q *RepairQueue) Len(_ context.Context, name string) (int64, error) {
	if !tenant.Valid(name) {
		return 0, fmt.Errorf("route repair backlog: invalid tenant %q", name)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return int64(len(q.of(name).topics)), nil
}

// RoutesBuilt reports the marker.
func (q *RepairQueue) RoutesBuilt(_ context.Context, name string) (bool, error) {
	if !tenant.Valid(name) {
		return false, fmt.Errorf("routes built marker: invalid tenant %q", name)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.of(name).built, nil
}

// MarkRoutesBuilt sets the marker.
func (q *RepairQueue) MarkRoutesBuilt(_ context.Context, name string) error {
	if !tenant.Valid(name) {
		return fmt.Errorf("mark routes built: invalid tenant %q", name)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.of(name).built = true
	return nil
}

// Forget drops the tenant's tickets and marker, as a Redis FLUSHALL would.
func (q *RepairQueue) Forget(name string) {
	q.mu.Lock()
	delete(q.tenants, name)
	q.mu.Unlock()
}
