package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

var _ ports.DeliverBacklog = (*DeliverQueue)(nil)

// Backlog scan bounds: a list is read in pages, and one longer than backlogScanMax is not read
// to its end (the backlog is then reported partial, which holds archiving back).
const (
	backlogPage    = 1000
	backlogScanMax = 100_000
)

// MonthBacklog counts the jobs of month m's messages in every partition's queue and
// processing list (of the configured split and any earlier one not yet moved over, grouped or
// named before the slot groups) and in the dead letters. Jobs without a message (control
// events) concern no month.
func (q *DeliverQueue) MonthBacklog(ctx context.Context, tenant string, m month.Month) (archive.Backlog, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return archive.Backlog{}, fmt.Errorf("deliver backlog: %w", err)
	}
	splits, err := q.c.Do(ctx, q.c.B().Smembers().Key(k.DeliverPartitions()).Build()).AsStrSlice()
	if err != nil {
		return archive.Backlog{}, fmt.Errorf("deliver partitions of %s: %w", tenant, err)
	}
	counts := map[int]bool{1: true, q.partitions: true}
	for _, s := range splits {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			counts[n] = true
		}
	}
	var b archive.Backlog
	type list struct {
		key string
		n   *int64
	}
	lists := []list{{k.UngroupedDeliverDead(), &b.Dead}}
	for g := range SlotGroups {
		lists = append(lists, list{k.DeliverDead(g), &b.Dead})
	}
	for n := range counts {
		for i := range n {
			lists = append(lists,
				list{k.DeliverQueueOf(i, n), &b.Queued}, list{k.DeliverProcessingOf(i, n), &b.Processing},
				list{k.UngroupedDeliverQueueOf(i, n), &b.Queued}, list{k.UngroupedDeliverProcessingOf(i, n), &b.Processing})
		}
	}
	for _, l := range lists {
		partial, err := q.countMonth(ctx, l.key, m, l.n)
		if err != nil {
			return archive.Backlog{}, err
		}
		b.Partial = b.Partial || partial
	}
	return b, nil
}

// countMonth adds the jobs of month m in one list to n, reading it in pages up to
// backlogScanMax entries; partial reports a list longer than that.
func (q *DeliverQueue) countMonth(ctx context.Context, key string, m month.Month, n *int64) (partial bool, err error) {
	for start := int64(0); ; start += backlogPage {
		if start >= backlogScanMax {
			return true, nil
		}
		raw, err := q.c.Do(ctx, q.c.B().Lrange().Key(key).Start(start).Stop(start+backlogPage-1).Build()).AsStrSlice()
		if err != nil {
			return false, fmt.Errorf("read %s: %w", key, err)
		}
		for _, s := range raw {
			var job delivery.Job
			// An undecodable job's month is unknown: it counts against every month.
			if json.Unmarshal([]byte(s), &job) != nil || (job.Message != nil && job.Message.Month == m) {
				*n++
			}
		}
		if len(raw) < backlogPage {
			return false, nil
		}
	}
}
