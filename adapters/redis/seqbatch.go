package redis

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// maxSeqBatch bounds the sends of one allocateScript call, so one call never holds Redis long.
const maxSeqBatch = 64

// seqBatches gathers the allocations of each slot group into shared script calls (issue 30
// part 2: Redis work per message cut by batching): the first send of an idle group goes at
// once, alone; the sends that come while a call of the group is in flight queue up and go
// together in the next call, as soon as that one returns. So a send waits at most for the one
// call before it, which it would have queued behind on the connection anyway, and under load
// a call carries many sends: one script dispatch and one reading of the group's month for
// all of them. Batches run in the order they formed, and within a batch the sends in arrival
// order, each as if alone.
type seqBatches struct {
	c rueidis.Client

	mu     sync.Mutex
	groups map[string]*seqQueue // by the group's active_month key; present while a call runs
}

// seqQueue is a group with a call in flight and the sends waiting for the next.
type seqQueue struct {
	waiting []*seqCall
}

// seqCall is one send's part of a batch: its keys and arguments, then its reply.
type seqCall struct {
	ctx   context.Context // the send's: a send that gave up before its batch left is not sent
	keys  [3]string       // idem, seq counter, pending
	args  [allocateArgs]string
	reply []string
	err   error
	done  chan struct{}
}

// do runs call in the next batch of group k and returns its reply. ctx bounds the wait; a
// batch that left runs to its end, until the latest deadline of its sends, as one send's call
// alone would once sent.
func (b *seqBatches) do(ctx context.Context, k Keys, call *seqCall) ([]string, error) {
	call.ctx = ctx
	group := k.ActiveMonth()
	b.mu.Lock()
	if q, busy := b.groups[group]; busy {
		q.waiting = append(q.waiting, call)
		b.mu.Unlock()
	} else {
		b.groups[group] = &seqQueue{}
		b.mu.Unlock()
		go b.run(k, []*seqCall{call})
	}
	select {
	case <-call.done:
		return call.reply, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run sends batch, then the sends that queued meanwhile, until none is left.
func (b *seqBatches) run(k Keys, batch []*seqCall) {
	group := k.ActiveMonth()
	for {
		b.exec(k, batch)
		b.mu.Lock()
		q := b.groups[group]
		if len(q.waiting) == 0 {
			delete(b.groups, group)
			b.mu.Unlock()
			return
		}
		n := min(len(q.waiting), maxSeqBatch)
		batch = q.waiting[:n:n]
		q.waiting = q.waiting[n:]
		b.mu.Unlock()
	}
}

// exec makes one allocateScript call for the sends of batch still waiting and hands each its
// reply.
func (b *seqBatches) exec(k Keys, batch []*seqCall) {
	batch = slices.DeleteFunc(batch, func(c *seqCall) bool {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			return true
		}
		return false
	})
	if len(batch) == 0 {
		return
	}
	ctx, cancel := batchContext(batch)
	defer cancel()
	keys := make([]string, 0, 3+3*len(batch))
	keys = append(keys, k.ActiveMonth(), k.ReadyMonths(), k.SwitchMonth())
	args := make([]string, 0, allocateArgs*len(batch))
	for _, c := range batch {
		keys, args = append(keys, c.keys[:]...), append(args, c.args[:]...)
	}
	replies, err := allocateScript.Exec(ctx, b.c, keys, args).ToArray()
	if err == nil && len(replies) != len(batch) {
		err = fmt.Errorf("script answered %d of %d allocations", len(replies), len(batch))
	}
	for i, c := range batch {
		if c.err = err; err == nil {
			c.reply, c.err = replies[i].AsStrSlice()
		}
		close(c.done)
	}
}

// batchContext is the context of a batch's call: the first send's values, no cancellation of
// its own, and the latest deadline of the sends, when every send has one.
func batchContext(batch []*seqCall) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(batch[0].ctx)
	var latest time.Time
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(ctx, latest)
}
