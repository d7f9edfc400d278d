package memory

import (
	"context"
	"encoding/json"
	"fmt"

	"imd/core/delivery"
	"imd/core/tenant"
	"imd/ports"
)

var _ ports.DeliverDepth = (*DeliverQueue)(nil)

// Depth counts the jobs of every partition of the current split and the dead letters.
func (q *DeliverQueue) Depth(_ context.Context, name string) (delivery.QueueDepth, error) {
	if !tenant.Valid(name) {
		return delivery.QueueDepth{}, fmt.Errorf("deliver depth: invalid tenant %q", name)
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(name)
	d := delivery.QueueDepth{Partitions: make([]delivery.PartitionDepth, q.partitions), Dead: int64(len(l.dead))}
	for i := range d.Partitions {
		key := partitionKey{i, q.partitions}
		queued := l.queues[key]
		d.Partitions[i] = delivery.PartitionDepth{Queued: int64(len(queued)), Processing: int64(len(l.processing[key]))}
		if len(queued) > 0 {
			var job delivery.Job
			if json.Unmarshal([]byte(queued[0]), &job) == nil {
				d.Partitions[i].OldestQueuedAt = job.QueuedAt
			}
		}
	}
	return d, nil
}
