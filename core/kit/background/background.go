// Package background runs one goroutine from a component's Start until its Stop, for work that
// is not one of core/runtime's supervised loops but whose place in the start and stop order
// matters: the tenant refresh starts after the listeners, the presence removals stop after
// them.
package background

import "context"

// Task is one goroutine that runs from Start until Stop, which waits for it to return.
type Task struct {
	run    func(ctx context.Context)
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns run, to be started and stopped once.
func New(run func(ctx context.Context)) *Task { return &Task{run: run} }

// OnClose returns a Task that calls act once ch closes, unless it is stopped first: how a
// component that cannot go on (a frame listener that stopped accepting) ends the process for
// its supervisor to restart (seed 003 §18).
func OnClose(ch <-chan struct{}, act func()) *Task {
	return New(func(ctx context.Context) {
		select {
		case <-ch:
			act()
		case <-ctx.Done():
		}
	})
}

// Start launches run; its ctx ends at Stop, not with the start context.
func (b *Task) Start(context.Context) error {
	var ctx context.Context
	ctx, b.cancel = context.WithCancel(context.Background())
	b.done = make(chan struct{})
	go func() { defer close(b.done); b.run(ctx) }()
	return nil
}

// Stop ends run's ctx and waits for it to return, or for ctx to end.
func (b *Task) Stop(ctx context.Context) error {
	if b.cancel == nil {
		return nil
	}
	b.cancel()
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
