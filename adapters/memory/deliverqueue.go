package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"imd/core/delivery"
	"imd/core/tenant"
	"imd/ports"
)

// DeliverQueue is an in-memory ports.DeliverQueue. Like the Redis adapter it stores jobs as
// JSON and uses the stored string as the receipt, so what does not survive encoding (Receipt)
// does not survive here either.
type DeliverQueue struct {
	clock func() time.Time

	mu      sync.Mutex
	tenants map[string]*jobLists
	pushed  chan struct{} // closed and replaced on every push, to wake waiting Takes
}

var _ ports.DeliverQueue = (*DeliverQueue)(nil)

type jobLists struct {
	queue, processing, dead []string
	done                    map[string]time.Time // key → expiry
}

// NewDeliverQueue returns an empty queue; clock expires MarkDone keys.
func NewDeliverQueue(clock func() time.Time) *DeliverQueue {
	return &DeliverQueue{clock: clock, tenants: map[string]*jobLists{}, pushed: make(chan struct{})}
}

// Push appends the job to its tenant's queue.
func (q *DeliverQueue) Push(_ context.Context, job delivery.Job) error {
	if !tenant.Valid(job.Tenant) {
		return fmt.Errorf("push deliver job: invalid tenant %q", job.Tenant)
	}
	raw, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("encode deliver job %d: %w", job.MsgID, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.of(job.Tenant)
	l.queue = append(l.queue, string(raw))
	close(q.pushed)
	q.pushed = make(chan struct{})
	return nil
}

// Take moves the oldest job to processing, waiting up to timeout (≤ 0: no wait).
func (q *DeliverQueue) Take(ctx context.Context, name string, timeout time.Duration) (delivery.Job, bool, error) {
	if !tenant.Valid(name) {
		return delivery.Job{}, false, fmt.Errorf("take deliver job: invalid tenant %q", name)
	}
	deadline := time.NewTimer(max(timeout, 0))
	defer deadline.Stop()
	for {
		raw, ok, wake := q.tryTake(name)
		if ok {
			var job delivery.Job
			if err := json.Unmarshal([]byte(raw), &job); err != nil {
				return delivery.Job{}, false, fmt.Errorf("decode deliver job in %s: %w", name, err)
			}
			job.Receipt = raw
			return job, true, nil
		}
		if timeout <= 0 {
			return delivery.Job{}, false, nil
		}
		select {
		case <-wake:
		case <-deadline.C:
			return delivery.Job{}, false, nil
		case <-ctx.Done():
			return delivery.Job{}, false, fmt.Errorf("take deliver job in %s: %w", name, ctx.Err())
		}
	}
}

// tryTake moves the head of the queue to processing, or returns the channel the next push closes.
func (q *DeliverQueue) tryTake(name string) (string, bool, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.of(name)
	if len(l.queue) == 0 {
		return "", false, q.pushed
	}
	raw := l.queue[0]
	l.queue = l.queue[1:]
	l.processing = append(l.processing, raw)
	return raw, true, nil
}

// Ack removes a taken job from processing.
func (q *DeliverQueue) Ack(_ context.Context, job delivery.Job) error {
	if err := validTakenJob(job); err != nil {
		return fmt.Errorf("ack deliver job: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.of(job.Tenant)
	l.processing, _ = lremFirst(l.processing, job.Receipt)
	return nil
}

// Retry requeues a taken job with Attempts+1, or dead-letters it after maxAttempts failures. A
// job no longer in processing is left alone (dead=false).
func (q *DeliverQueue) Retry(_ context.Context, job delivery.Job, maxAttempts int) (bool, error) {
	if err := validTakenJob(job); err != nil {
		return false, fmt.Errorf("retry deliver job: %w", err)
	}
	next := job
	next.Attempts++
	raw, err := json.Marshal(next)
	if err != nil {
		return false, fmt.Errorf("encode deliver job %d: %w", job.MsgID, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.of(job.Tenant)
	var found bool
	if l.processing, found = lremFirst(l.processing, job.Receipt); !found {
		return false, nil
	}
	if next.Attempts >= maxAttempts {
		l.dead = append(l.dead, string(raw))
		return true, nil
	}
	l.queue = append(l.queue, string(raw))
	close(q.pushed)
	q.pushed = make(chan struct{})
	return false, nil
}

// RequeueStale moves processing back to the head of the queue, keeping its order.
func (q *DeliverQueue) RequeueStale(_ context.Context, name string) (int, error) {
	if !tenant.Valid(name) {
		return 0, fmt.Errorf("requeue stale deliver jobs: invalid tenant %q", name)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.of(name)
	n := len(l.processing)
	l.queue = append(l.processing, l.queue...)
	l.processing = nil
	if n > 0 {
		close(q.pushed)
		q.pushed = make(chan struct{})
	}
	return n, nil
}

// MarkDone sets key once per ttl; first=false means it is set already.
func (q *DeliverQueue) MarkDone(_ context.Context, name, key string, ttl time.Duration) (bool, error) {
	if !tenant.Valid(name) {
		return false, fmt.Errorf("mark deliver job done: invalid tenant %q", name)
	}
	if key == "" || ttl < time.Millisecond {
		return false, fmt.Errorf("mark deliver job done in %s: need a key and a ttl ≥ 1ms, got %q, %v", name, key, ttl)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.of(name)
	now := q.clock()
	if exp, ok := l.done[key]; ok && now.Before(exp) {
		return false, nil
	}
	l.done[key] = now.Add(ttl)
	return true, nil
}

func (q *DeliverQueue) of(name string) *jobLists {
	l, ok := q.tenants[name]
	if !ok {
		l = &jobLists{done: map[string]time.Time{}}
		q.tenants[name] = l
	}
	return l
}

func validTakenJob(job delivery.Job) error {
	if !tenant.Valid(job.Tenant) {
		return fmt.Errorf("invalid tenant %q", job.Tenant)
	}
	if job.Receipt == "" {
		return fmt.Errorf("job %d of %s was not taken from the queue (no receipt)", job.MsgID, job.Tenant)
	}
	return nil
}

// lremFirst drops the first element equal to v, like LREM key 1 v.
func lremFirst(list []string, v string) ([]string, bool) {
	i := slices.Index(list, v)
	if i < 0 {
		return list, false
	}
	return slices.Delete(list, i, i+1), true
}
