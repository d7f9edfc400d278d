package redis

import (
	"context"
	"encoding/json"
	"fmt"

	"imd/core/delivery"
	"imd/ports"
)

var _ ports.DeliverInspector = (*DeliverQueue)(nil)

// RequeueDead moves the oldest dead letters back to their partitions one by one; each move is
// atomic (the move script), so a concurrent requeue never moves a job twice.
func (q *DeliverQueue) RequeueDead(ctx context.Context, tenant string, max int) (int, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return 0, fmt.Errorf("requeue dead letters: %w", err)
	}
	if max <= 0 {
		return 0, nil
	}
	dead, err := q.c.Do(ctx, q.c.B().Lrange().Key(k.DeliverDead()).Start(0).Stop(int64(max-1)).Build()).AsStrSlice()
	if err != nil {
		return 0, fmt.Errorf("read dead letters of %s: %w", tenant, err)
	}
	n := 0
	for _, raw := range dead {
		next, job, ok := revived(raw)
		if !ok {
			continue
		}
		queue := k.DeliverQueueOf(delivery.PartitionOf(job.Topic, q.partitions), q.partitions)
		moved, err := q.move(ctx, k.DeliverDead(), queue, raw, next)
		if err != nil {
			return n, fmt.Errorf("requeue dead letter %d of %s: %w", job.MsgID, tenant, err)
		}
		if moved {
			n++
		}
	}
	return n, nil
}

// revived is a dead letter with its attempts reset, ready to queue again; ok=false when it
// does not decode.
func revived(raw string) (string, delivery.Job, bool) {
	var job delivery.Job
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		return "", job, false
	}
	job.Attempts = 0
	next, err := json.Marshal(job)
	if err != nil {
		return "", job, false
	}
	return string(next), job, true
}
