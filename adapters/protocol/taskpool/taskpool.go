// Package taskpool runs request handlers off the event loop (seed 003 §6.2): a fixed set of
// worker goroutines reading one bounded queue. Submitting never blocks, so an event loop can
// answer "busy" at once instead of stalling every connection it serves.
package taskpool

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/imdhq/imd/ports"
)

// ErrFull means the queue is at capacity; the caller answers 50301 and the client retries.
var ErrFull = errors.New("taskpool: queue full")

// ErrClosed means the pool is draining for shutdown and takes no more work.
var ErrClosed = errors.New("taskpool: closed")

// Pool is a bounded queue served by a fixed number of workers.
type Pool struct {
	tasks   chan func()
	metrics ports.Metrics
	workers sync.WaitGroup

	// mu orders Submit against Close: Close must not close tasks while a Submit sends on it.
	mu     sync.RWMutex
	closed bool
}

// New starts workers goroutines serving a queue of up to queue waiting tasks.
func New(workers, queue int, metrics ports.Metrics) *Pool {
	p := &Pool{tasks: make(chan func(), max(queue, 0)), metrics: metrics}
	for range max(workers, 1) {
		p.workers.Go(p.work)
	}
	return p
}

func (p *Pool) work() {
	for task := range p.tasks {
		p.metrics.Set("taskpool_depth", float64(len(p.tasks)))
		task()
	}
}

// Submit queues task without blocking. It fails with ErrFull when the queue is at capacity
// and ErrClosed once Close has begun.
func (p *Pool) Submit(task func()) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	select {
	case p.tasks <- task:
		p.metrics.Set("taskpool_depth", float64(len(p.tasks)))
		return nil
	default:
		p.metrics.Inc("taskpool_rejected_total")
		return ErrFull
	}
}

// Close stops taking tasks and waits until every queued task has run, or ctx ends. Tasks still
// running when ctx ends keep running; their own contexts are the way to stop them.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.tasks)
	}
	p.mu.Unlock()

	drained := make(chan struct{})
	go func() {
		p.workers.Wait()
		close(drained)
	}()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("taskpool: drain: %w", ctx.Err())
	}
}
