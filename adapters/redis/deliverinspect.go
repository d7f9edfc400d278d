package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/ports"
)

var _ ports.DeliverInspector = (*DeliverQueue)(nil)

// RequeueDead moves the oldest dead letters of each slot group back to their partitions one
// by one, up to max in all. A move within one group is atomic (the move script), so a
// concurrent requeue never moves a job twice; a move to another group's partition (the split
// changed since the job died) takes the job off the dead letters first and then queues it,
// for the same reason.
func (q *DeliverQueue) RequeueDead(ctx context.Context, tenant string, max int) (int, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return 0, fmt.Errorf("requeue dead letters: %w", err)
	}
	if max <= 0 {
		return 0, nil
	}
	cmds := make(rueidis.Commands, SlotGroups)
	for g := range SlotGroups {
		cmds[g] = q.c.B().Lrange().Key(k.DeliverDead(g)).Start(0).Stop(int64(max - 1)).Build()
	}
	n := 0
	for g, r := range q.c.DoMulti(ctx, cmds...) {
		dead, err := r.AsStrSlice()
		if err != nil {
			return n, fmt.Errorf("read dead letters of %s: %w", tenant, err)
		}
		for _, raw := range dead {
			if n == max {
				return n, nil
			}
			next, job, ok := revived(raw)
			if !ok {
				continue
			}
			moved, err := q.revive(ctx, k, g, raw, next, delivery.PartitionOf(job.Topic, q.partitions))
			if err != nil {
				return n, fmt.Errorf("requeue dead letter %d of %s: %w", job.MsgID, tenant, err)
			}
			if moved {
				n++
			}
		}
	}
	return n, nil
}

// revive moves dead letter raw of group g to partition p as next.
func (q *DeliverQueue) revive(ctx context.Context, k Keys, g int, raw, next string, p int) (bool, error) {
	queue := k.DeliverQueueOf(p, q.partitions)
	if PartitionGroup(p) == g {
		return q.move(ctx, k.DeliverDead(g), queue, raw, next)
	}
	removed, err := q.c.Do(ctx, q.c.B().Lrem().Key(k.DeliverDead(g)).Count(1).Element(raw).Build()).AsInt64()
	if err != nil || removed == 0 {
		return false, err
	}
	if err := q.c.Do(ctx, q.c.B().Rpush().Key(queue).Element(next).Build()).Error(); err != nil {
		return false, fmt.Errorf("queue it again (it is off the dead letters): %w", err)
	}
	return true, nil
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

// Depth reads the length of every partition's queue and processing list, the head of each
// queue and the length of every slot group's dead letters, in one round trip.
func (q *DeliverQueue) Depth(ctx context.Context, tenant string) (delivery.QueueDepth, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return delivery.QueueDepth{}, fmt.Errorf("deliver depth: %w", err)
	}
	cmds := make(rueidis.Commands, 0, 3*q.partitions+SlotGroups)
	for i := range q.partitions {
		queue := k.DeliverQueueOf(i, q.partitions)
		cmds = append(cmds,
			q.c.B().Llen().Key(queue).Build(),
			q.c.B().Llen().Key(k.DeliverProcessingOf(i, q.partitions)).Build(),
			q.c.B().Lindex().Key(queue).Index(0).Build())
	}
	for g := range SlotGroups {
		cmds = append(cmds, q.c.B().Llen().Key(k.DeliverDead(g)).Build())
	}
	res := q.c.DoMulti(ctx, cmds...)
	// A list that cannot be read (e.g. a damaged key) counts 0 and is named in the error; the
	// others are still reported, so one stuck partition does not hide the rest.
	var errs []error
	length := func(r rueidis.RedisResult, what string, i int) int64 {
		n, err := r.AsInt64()
		if err != nil {
			errs = append(errs, fmt.Errorf("deliver %s of %s partition %d: %w", what, tenant, i, err))
		}
		return n
	}
	d := delivery.QueueDepth{Partitions: make([]delivery.PartitionDepth, q.partitions)}
	for i := range d.Partitions {
		p := &d.Partitions[i]
		p.Queued = length(res[3*i], "queue length", i)
		p.Processing = length(res[3*i+1], "processing length", i)
		head, err := res[3*i+2].ToString()
		switch {
		case rueidis.IsRedisNil(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("deliver queue head of %s partition %d: %w", tenant, i, err))
		default:
			p.OldestQueuedAt = queuedAt(head)
		}
	}
	for g, r := range res[3*q.partitions:] {
		d.Dead += length(r, "dead letters of slot group", g)
	}
	return d, errors.Join(errs...)
}

// queuedAt reads a queued job's QueuedAt; an undecodable job (it goes to the dead letters when
// taken) reads as 0, no age, rather than failing the whole measurement.
func queuedAt(raw string) int64 {
	var job struct {
		QueuedAt int64 `json:"queued_at"`
	}
	if json.Unmarshal([]byte(raw), &job) != nil {
		return 0
	}
	return job.QueuedAt
}
