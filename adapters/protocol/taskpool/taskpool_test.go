package taskpool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type counter struct {
	mu     sync.Mutex
	counts map[string]float64
	gauges map[string]float64
}

func newCounter() *counter {
	return &counter{counts: map[string]float64{}, gauges: map[string]float64{}}
}

func (c *counter) Inc(name string, _ ...string) {
	c.mu.Lock()
	c.counts[name]++
	c.mu.Unlock()
}
func (c *counter) Add(string, float64, ...string)     {}
func (c *counter) Observe(string, float64, ...string) {}
func (c *counter) Set(name string, v float64, _ ...string) {
	c.mu.Lock()
	c.gauges[name] = v
	c.mu.Unlock()
}

func TestSubmitRefusesWhenFull(t *testing.T) {
	m := newCounter()
	p := New(1, 1, m)
	hold, running := make(chan struct{}), make(chan struct{})
	if err := p.Submit(func() { close(running); <-hold }); err != nil {
		t.Fatal(err)
	}
	<-running
	if err := p.Submit(func() {}); err != nil {
		t.Fatalf("queued submit: %v", err)
	}
	if err := p.Submit(func() {}); !errors.Is(err, ErrFull) {
		t.Fatalf("submit over capacity: %v, want ErrFull", err)
	}
	if m.counts["taskpool_rejected_total"] != 1 || m.gauges["taskpool_depth"] != 1 {
		t.Fatalf("metrics %v %v", m.counts, m.gauges)
	}
	close(hold)
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestCloseDrainsQueuedTasks(t *testing.T) {
	p := New(2, 100, newCounter())
	var ran atomic.Int32
	for range 100 {
		if err := p.Submit(func() { time.Sleep(time.Millisecond); ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 100 {
		t.Fatalf("ran %d of 100 tasks before Close returned", ran.Load())
	}
	if err := p.Submit(func() {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit after close: %v, want ErrClosed", err)
	}
	if err := p.Close(t.Context()); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestCloseGivesUpAtDeadline(t *testing.T) {
	p := New(1, 1, newCounter())
	hold := make(chan struct{})
	defer close(hold)
	if err := p.Submit(func() { <-hold }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close with a stuck task: %v, want DeadlineExceeded", err)
	}
}
