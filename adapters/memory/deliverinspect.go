package memory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

var _ ports.DeliverInspector = (*DeliverQueue)(nil)

// RequeueDead moves up to max of the oldest decodable dead letters to their partitions' tails
// with their attempts reset.
func (q *DeliverQueue) RequeueDead(_ context.Context, name string, max int) (int, error) {
	if !tenant.Valid(name) {
		return 0, fmt.Errorf("requeue dead letters: invalid tenant %q", name)
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(name)
	var kept []string
	n := 0
	for i, raw := range l.dead {
		if i >= max {
			kept = append(kept, raw)
			continue
		}
		var job delivery.Job
		if err := json.Unmarshal([]byte(raw), &job); err != nil {
			kept = append(kept, raw)
			continue
		}
		job.Attempts = 0
		next, err := json.Marshal(job)
		if err != nil {
			kept = append(kept, raw)
			continue
		}
		p := q.partitionOf(job)
		l.queues[p] = append(l.queues[p], string(next))
		n++
	}
	l.dead = kept
	if n > 0 {
		q.s.wake()
	}
	return n, nil
}

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
