package session

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
)

// fakeLoop is an event loop that records what it is handed: the connections' writes, and a
// "run" each time a runnable runs (at once, as if the writes before it were done).
type fakeLoop struct {
	mu  sync.Mutex
	log []string
}

func (l *fakeLoop) Run(_ context.Context, f func()) error {
	l.record("run")
	f()
	return nil
}

// record is safe on a nil loop, so connections without one need no check.
func (l *fakeLoop) record(what string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.log = append(l.log, what)
	l.mu.Unlock()
}

// bursts returns the numbers of writes between runs, in order.
func (l *fakeLoop) bursts() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []int{0}
	for _, e := range l.log {
		if e == "run" {
			out = append(out, 0)
			continue
		}
		out[len(out)-1]++
	}
	return out
}

func TestPushHandsEachEventLoopBoundedChunks(t *testing.T) {
	tests := []struct {
		name        string
		conns       [2]int // connections on loop a, on loop b
		wantBurstsA []int
		wantBurstsB []int
	}{
		{"small group: no waiting", [2]int{3, 2}, []int{3}, []int{2}},
		{"exactly one chunk", [2]int{loopChunk, 1}, []int{loopChunk}, []int{1}},
		{"big group: chunks per loop", [2]int{2*loopChunk + 5, loopChunk + 1}, []int{loopChunk, loopChunk, 5}, []int{loopChunk, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture()
			loops := [2]*fakeLoop{{}, {}}
			var recipients []int64
			var fakes []*fakeConn
			for li, n := range tt.conns {
				for range n {
					user := int64(len(recipients) + 1)
					recipients = append(recipients, user)
					fc := &fakeConn{ev: loops[li]}
					fx.nextID++
					fx.reg.Bind(NewConn(fx.nextID, fc, roomy, fx.metrics), Identity{"t", user, 1})
					fakes = append(fakes, fc)
				}
			}
			rep := fx.reg.Push(t.Context(), "t", delivery.Target{Recipients: recipients}, msgPush(1))
			if rep.Delivered != len(recipients) || rep.Failed != 0 {
				t.Fatalf("report %+v, want %d delivered", rep, len(recipients))
			}
			for _, fc := range fakes {
				if n := len(fc.frames(t)); n != 1 {
					t.Fatalf("a connection got %d frames, want 1", n)
				}
			}
			for li, want := range [][]int{tt.wantBurstsA, tt.wantBurstsB} {
				if got := loops[li].bursts(); !slices.Equal(got, want) {
					t.Fatalf("loop %d: writes between runs %v, want %v", li, got, want)
				}
			}
		})
	}
}

// stuckLoop takes runnables and never runs them, as a loop that stopped.
type stuckLoop struct{ fakeLoop }

func (l *stuckLoop) Run(context.Context, func()) error {
	l.record("run")
	return nil
}

// A loop that never runs the marker must not hold the deliver worker: once its context ends,
// the rest of the push is handed over at once and every connection still gets its frame.
func TestPushToAStuckLoopEndsWithItsContext(t *testing.T) {
	fx := newFixture()
	loop := &stuckLoop{}
	var recipients []int64
	var fakes []*fakeConn
	for user := int64(1); user <= 3*loopChunk; user++ {
		fc := &fakeConn{ev: &loop.fakeLoop}
		fx.nextID++
		fx.reg.Bind(NewConn(fx.nextID, &stuckConn{fakeConn: fc, loop: loop}, roomy, fx.metrics), Identity{"t", user, 1})
		recipients = append(recipients, user)
		fakes = append(fakes, fc)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	rep := fx.reg.Push(ctx, "t", delivery.Target{Recipients: recipients}, msgPush(1))
	if rep.Delivered != len(recipients) {
		t.Fatalf("report %+v, want %d delivered", rep, len(recipients))
	}
	for _, fc := range fakes {
		if n := len(fc.frames(t)); n != 1 {
			t.Fatalf("a connection got %d frames, want 1", n)
		}
	}
}

// stuckConn is a fakeConn on a stuckLoop.
type stuckConn struct {
	*fakeConn
	loop *stuckLoop
}

func (c *stuckConn) Loop() Loop { return c.loop }
