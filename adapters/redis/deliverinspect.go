package redis

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/rueidis"

	"imd/core/delivery"
	"imd/ports"
)

var _ ports.DeliverInspector = (*DeliverQueue)(nil)

// Depths reads the lengths of every partition's lists, the head of each queue and the length
// of the dead-letter list in one round trip.
func (q *DeliverQueue) Depths(ctx context.Context, tenant string) (delivery.Depths, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return delivery.Depths{}, fmt.Errorf("deliver depths: %w", err)
	}
	cmds := make(rueidis.Commands, 0, 3*q.partitions+1)
	for i := range q.partitions {
		queue := k.DeliverQueueOf(i, q.partitions)
		cmds = append(cmds, q.c.B().Llen().Key(queue).Build(),
			q.c.B().Llen().Key(k.DeliverProcessingOf(i, q.partitions)).Build(),
			q.c.B().Lindex().Key(queue).Index(0).Build())
	}
	cmds = append(cmds, q.c.B().Llen().Key(k.DeliverDead()).Build())
	res := q.c.DoMulti(ctx, cmds...)
	out := delivery.Depths{Partitions: make([]delivery.PartitionDepth, q.partitions)}
	for i := range q.partitions {
		p := delivery.PartitionDepth{Partition: i}
		if p.Queued, err = res[3*i].AsInt64(); err != nil {
			return delivery.Depths{}, fmt.Errorf("deliver depths of %s partition %d: %w", tenant, i, err)
		}
		if p.Processing, err = res[3*i+1].AsInt64(); err != nil {
			return delivery.Depths{}, fmt.Errorf("deliver depths of %s partition %d: %w", tenant, i, err)
		}
		if head, err := res[3*i+2].ToString(); err == nil {
			p.OldestQueuedAt = queuedAt(head)
		}
		out.Partitions[i] = p
	}
	if out.Dead, err = res[len(res)-1].AsInt64(); err != nil {
		return delivery.Depths{}, fmt.Errorf("deliver dead letters of %s: %w", tenant, err)
	}
	return out, nil
}

// queuedAt is a stored job's queue time, 0 when it does not decode.
func queuedAt(raw string) int64 {
	var job delivery.Job
	if json.Unmarshal([]byte(raw), &job) != nil {
		return 0
	}
	return job.QueuedAt
}

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
