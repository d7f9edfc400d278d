package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// DeliverQueue is an in-memory ports.DeliverQueue. Like the Redis adapter it stores jobs as
// JSON and uses the stored string as the receipt, so what does not survive encoding (Receipt)
// does not survive here either; and it keeps the lists of every partition count apart, so a
// queue of another count on the same state (WithPartitions) behaves like a node restarted with
// another configuration.
type DeliverQueue struct {
	clock      func() time.Time
	partitions int
	s          *deliverState
}

var _ ports.DeliverQueue = (*DeliverQueue)(nil)

type deliverState struct {
	mu      sync.Mutex
	tenants map[string]*jobLists
	pushed  chan struct{} // closed and replaced on every push, to wake waiting Takes
}

type jobLists struct {
	queues     map[partitionKey][]string
	processing map[partitionKey][]string
	dead       []string
	done       map[string]time.Time // key → expiry
	leases     map[partitionKey]deliverLease
}

type partitionKey struct{ index, count int }

// NewDeliverQueue returns an empty queue with one partition; clock stamps pushed jobs and
// expires MarkDone keys.
func NewDeliverQueue(clock func() time.Time) *DeliverQueue {
	return &DeliverQueue{clock: clock, partitions: 1, s: &deliverState{tenants: map[string]*jobLists{}, pushed: make(chan struct{})}}
}

// WithPartitions returns a queue on the same jobs split into n partitions
// (delivery.CheckPartitions).
func (q *DeliverQueue) WithPartitions(n int) (*DeliverQueue, error) {
	if err := delivery.CheckPartitions(n); err != nil {
		return nil, err
	}
	return &DeliverQueue{clock: q.clock, partitions: n, s: q.s}, nil
}

// Partitions is the number of partitions of every tenant's queue.
func (q *DeliverQueue) Partitions() int { return q.partitions }

func (q *DeliverQueue) partitionOf(job delivery.Job) partitionKey {
	return partitionKey{delivery.PartitionOf(job.Topic, q.partitions), q.partitions}
}

// Push stamps the job with the clock's time and appends it to its topic's partition.
func (q *DeliverQueue) Push(_ context.Context, job delivery.Job) error {
	if !tenant.Valid(job.Tenant) {
		return fmt.Errorf("push deliver job: invalid tenant %q", job.Tenant)
	}
	job.QueuedAt = q.clock().UnixMilli()
	raw, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("encode deliver job %d: %w", job.MsgID, err)
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(job.Tenant)
	p := q.partitionOf(job)
	l.queues[p] = append(l.queues[p], string(raw))
	q.s.wake()
	return nil
}

// Take moves the oldest job of a partition to its processing list, waiting up to timeout (≤ 0:
// no wait).
func (q *DeliverQueue) Take(ctx context.Context, name string, partition int, timeout time.Duration) (delivery.Job, bool, error) {
	p, err := q.partition("take deliver job", name, partition)
	if err != nil {
		return delivery.Job{}, false, err
	}
	deadline := time.NewTimer(max(timeout, 0))
	defer deadline.Stop()
	for {
		raw, ok, wake := q.tryTake(name, p)
		if ok {
			job, err := decodeTaken(name, raw)
			return job, err == nil, err
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

// TakeMore moves up to max jobs of a partition to its processing list, without waiting.
func (q *DeliverQueue) TakeMore(_ context.Context, name string, partition, max int) ([]delivery.Job, error) {
	p, err := q.partition("take deliver jobs", name, partition)
	if err != nil {
		return nil, err
	}
	var jobs []delivery.Job
	for range max {
		raw, ok, _ := q.tryTake(name, p)
		if !ok {
			break
		}
		job, err := decodeTaken(name, raw)
		if err != nil {
			return jobs, err
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// partition checks the tenant and partition a take names.
func (q *DeliverQueue) partition(op, name string, partition int) (partitionKey, error) {
	if !tenant.Valid(name) {
		return partitionKey{}, fmt.Errorf("%s: invalid tenant %q", op, name)
	}
	if partition < 0 || partition >= q.partitions {
		return partitionKey{}, fmt.Errorf("%s in %s: partition %d of %d", op, name, partition, q.partitions)
	}
	return partitionKey{partition, q.partitions}, nil
}

// decodeTaken decodes a job moved to processing; the stored string is its receipt, as in Redis.
func decodeTaken(name, raw string) (delivery.Job, error) {
	var job delivery.Job
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		return delivery.Job{}, fmt.Errorf("decode deliver job in %s: %w", name, err)
	}
	job.Receipt = raw
	return job, nil
}

// tryTake moves the head of a partition to processing, or returns the channel the next push
// closes.
func (q *DeliverQueue) tryTake(name string, p partitionKey) (string, bool, <-chan struct{}) {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(name)
	if len(l.queues[p]) == 0 {
		return "", false, q.s.pushed
	}
	raw := l.queues[p][0]
	l.queues[p] = l.queues[p][1:]
	l.processing[p] = append(l.processing[p], raw)
	return raw, true, nil
}

// Ack removes taken jobs from processing.
func (q *DeliverQueue) Ack(_ context.Context, jobs ...delivery.Job) error {
	for _, job := range jobs {
		if err := validTakenJob(job); err != nil {
			return fmt.Errorf("ack deliver job: %w", err)
		}
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	for _, job := range jobs {
		l := q.s.of(job.Tenant)
		p := q.partitionOf(job)
		l.processing[p], _ = lremFirst(l.processing[p], job.Receipt)
	}
	return nil
}

// Retry requeues a taken job with Attempts+1, or dead-letters it after maxAttempts failures. A
// job no longer in processing is left alone (dead=false).
func (q *DeliverQueue) Retry(_ context.Context, job delivery.Job, maxAttempts int) (bool, error) {
	if err := validTakenJob(job); err != nil {
		return false, fmt.Errorf("retry deliver job: %w", err)
	}
	next, dead := job.Retried(maxAttempts)
	raw, err := json.Marshal(next)
	if err != nil {
		return false, fmt.Errorf("encode deliver job %d: %w", job.MsgID, err)
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(job.Tenant)
	p := q.partitionOf(job)
	var found bool
	if l.processing[p], found = lremFirst(l.processing[p], job.Receipt); !found {
		return false, nil
	}
	if dead {
		l.dead = append(l.dead, string(raw))
		return true, nil
	}
	l.queues[p] = append(l.queues[p], string(raw))
	q.s.wake()
	return false, nil
}

// RequeueStale moves every processing list back to the head of its partition, keeping its
// order, then the jobs queued under another partition count into this one's partitions.
func (q *DeliverQueue) RequeueStale(_ context.Context, name string) (int, error) {
	if !tenant.Valid(name) {
		return 0, fmt.Errorf("requeue stale deliver jobs: invalid tenant %q", name)
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(name)
	n := 0
	for _, p := range slices.SortedFunc(maps.Keys(l.processing), comparePartitions) {
		n += len(l.processing[p])
		l.queues[p] = append(l.processing[p], l.queues[p]...)
		delete(l.processing, p)
	}
	for _, p := range slices.SortedFunc(maps.Keys(l.queues), comparePartitions) {
		if p.count == q.partitions {
			continue
		}
		for _, raw := range l.queues[p] {
			var job delivery.Job
			if err := json.Unmarshal([]byte(raw), &job); err != nil {
				l.dead = append(l.dead, raw)
				continue
			}
			to := q.partitionOf(job)
			l.queues[to] = append(l.queues[to], raw)
			n++
		}
		delete(l.queues, p)
	}
	if n > 0 {
		q.s.wake()
	}
	return n, nil
}

func comparePartitions(a, b partitionKey) int {
	if a.count != b.count {
		return a.count - b.count
	}
	return a.index - b.index
}

// MarkDone sets each key once per ttl; first[i]=false means keys[i] is set already.
func (q *DeliverQueue) MarkDone(_ context.Context, name string, ttl time.Duration, keys ...string) ([]bool, error) {
	if !tenant.Valid(name) {
		return nil, fmt.Errorf("mark deliver jobs done: invalid tenant %q", name)
	}
	if ttl < time.Millisecond || slices.Contains(keys, "") {
		return nil, fmt.Errorf("mark deliver jobs done in %s: need keys and a ttl ≥ 1ms, got %q, %v", name, keys, ttl)
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(name)
	now := q.clock()
	first := make([]bool, len(keys))
	for i, key := range keys {
		if exp, ok := l.done[key]; ok && now.Before(exp) {
			continue
		}
		l.done[key] = now.Add(ttl)
		first[i] = true
	}
	return first, nil
}

// Done reports which keys are set and not expired.
func (q *DeliverQueue) Done(_ context.Context, name string, keys ...string) ([]bool, error) {
	if !tenant.Valid(name) {
		return nil, fmt.Errorf("read deliver done marks: invalid tenant %q", name)
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(name)
	now := q.clock()
	done := make([]bool, len(keys))
	for i, key := range keys {
		exp, ok := l.done[key]
		done[i] = ok && now.Before(exp)
	}
	return done, nil
}

// of returns a tenant's lists; the caller holds s.mu.
func (s *deliverState) of(name string) *jobLists {
	return stateOf(s.tenants, name, func() *jobLists {
		return &jobLists{
			queues: map[partitionKey][]string{}, processing: map[partitionKey][]string{},
			done: map[string]time.Time{}, leases: map[partitionKey]deliverLease{},
		}
	})
}

// wake releases every waiting Take; the caller holds s.mu.
func (s *deliverState) wake() {
	close(s.pushed)
	s.pushed = make(chan struct{})
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

// Queued counts the tenant's jobs still queued or taken but not acknowledged, over every
// partition count; dead letters are not counted.
func (q *DeliverQueue) Queued(name string) int {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(name)
	n := 0
	for _, jobs := range l.queues {
		n += len(jobs)
	}
	for _, jobs := range l.processing {
		n += len(jobs)
	}
	return n
}
