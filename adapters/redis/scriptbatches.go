package redis

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// maxBatch bounds the calls of one batched script call, so one call never holds Redis long.
const maxBatch = 64

// scriptBatches gathers the calls of each slot group into shared script calls (issue 30
// part 2: Redis work per message cut by batching): the first call of an idle group goes at
// once, alone; the calls that come while one of the group is in flight queue up and go
// together in the next, as soon as that one returns. So a call waits at most for the one
// before it, which it would have queued behind on the connection anyway, and under load one
// script dispatch carries many sends' work. Batches run in the order they formed, and within
// a batch the calls in arrival order, each as if alone. The seq allocation (DESIGN §4 step 4)
// and the commit follow-up (step 6) batch this way.
type scriptBatches struct {
	mu     sync.Mutex
	groups map[string]*batchQueue // by the group's batch key; present while a call runs
}

func newScriptBatches() *scriptBatches { return &scriptBatches{groups: map[string]*batchQueue{}} }

// batchQueue is a group with a call in flight and the calls waiting for the next.
type batchQueue struct {
	waiting []*batchedCall
}

// batchedCall is one caller's part of a batch: its keys and arguments, then its reply.
type batchedCall struct {
	ctx   context.Context // the caller's: one that gave up before its batch left is not sent
	keys  []string
	args  []string
	reply []string
	err   error
	done  chan struct{}
}

func newBatchedCall(keys, args []string) *batchedCall {
	return &batchedCall{keys: keys, args: args, done: make(chan struct{})}
}

// batchExec makes one script call for a batch and sets each call's reply or error.
type batchExec func(ctx context.Context, batch []*batchedCall)

// do runs call in the next batch of group, by exec, and returns its reply. ctx bounds the
// wait; a batch that left runs to its end, until the latest deadline of its calls, as one
// call alone would once sent. Every call of a group must take the same exec.
func (b *scriptBatches) do(ctx context.Context, group string, call *batchedCall, exec batchExec) ([]string, error) {
	call.ctx = ctx
	b.mu.Lock()
	if q, busy := b.groups[group]; busy {
		q.waiting = append(q.waiting, call)
		b.mu.Unlock()
	} else {
		b.groups[group] = &batchQueue{}
		b.mu.Unlock()
		go b.run(group, []*batchedCall{call}, exec)
	}
	select {
	case <-call.done:
		return call.reply, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run sends batch, then the calls that queued meanwhile, until none is left.
func (b *scriptBatches) run(group string, batch []*batchedCall, exec batchExec) {
	for {
		send(batch, exec)
		b.mu.Lock()
		q := b.groups[group]
		if len(q.waiting) == 0 {
			delete(b.groups, group)
			b.mu.Unlock()
			return
		}
		n := min(len(q.waiting), maxBatch)
		batch = q.waiting[:n:n]
		q.waiting = q.waiting[n:]
		b.mu.Unlock()
	}
}

// send runs exec on the calls of batch still waiting and hands each its reply.
func send(batch []*batchedCall, exec batchExec) {
	batch = slices.DeleteFunc(batch, func(c *batchedCall) bool {
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
	exec(ctx, batch)
	for _, c := range batch {
		close(c.done)
	}
}

// scriptExec is the batchExec of a script that takes keys, then every call's keys, and every
// call's arguments one call after another, and answers an array of one reply per call (an
// array of strings).
func scriptExec(c rueidis.Client, script *rueidis.Lua, keys ...string) batchExec {
	return func(ctx context.Context, batch []*batchedCall) {
		all := slices.Clip(keys)
		var args []string
		for _, call := range batch {
			all, args = append(all, call.keys...), append(args, call.args...)
		}
		replies, err := script.Exec(ctx, c, all, args).ToArray()
		if err == nil && len(replies) != len(batch) {
			err = fmt.Errorf("script answered %d of %d calls", len(replies), len(batch))
		}
		for i, call := range batch {
			if call.err = err; err == nil {
				call.reply, call.err = replies[i].AsStrSlice()
			}
		}
	}
}

// batchContext is the context of a batch's call: the first call's values, no cancellation of
// its own, and the latest deadline of the calls, when every call has one.
func batchContext(batch []*batchedCall) (context.Context, context.CancelFunc) {
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
