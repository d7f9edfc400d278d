package protocol

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeConns plays a listener's connections: a told one closes, a new one may arrive mid-drain.
type fakeConns struct {
	mu      sync.Mutex
	open    []int
	batches [][]int // the connections told, per call of open
}

func (f *fakeConns) list() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, nil)
	return slices.Clone(f.open)
}

func (f *fakeConns) tell(c int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches[len(f.batches)-1] = append(f.batches[len(f.batches)-1], c)
	f.open = slices.DeleteFunc(f.open, func(o int) bool { return o == c })
}

func TestDrainTellsEveryConnectionOnceInSmallBatches(t *testing.T) {
	tests := []struct {
		name        string
		conns       int
		window      time.Duration
		wantBatches int // calls of open
		maxBatch    int
	}{
		{"no window: all at once", 40, 0, 1, 40},
		{"window spreads 40 over 10 batches", 40, 10 * drainTick, 10, 4},
		{"fewer connections than batches", 3, 10 * drainTick, 10, 1},
		{"15 over 40 batches: one every two or three", 15, 40 * drainTick, 40, 1},
		{"nobody to drain", 0, 4 * drainTick, 4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeConns{}
			for i := range tt.conns {
				f.open = append(f.open, i)
			}
			Drain(context.Background(), tt.window, f.list, f.tell)
			if len(f.open) != 0 {
				t.Fatalf("still open after the drain: %v", f.open)
			}
			if len(f.batches) != tt.wantBatches {
				t.Fatalf("%d batches, want %d", len(f.batches), tt.wantBatches)
			}
			var all []int
			for _, b := range f.batches {
				if len(b) > tt.maxBatch {
					t.Fatalf("a batch of %d, want at most %d: %v", len(b), tt.maxBatch, f.batches)
				}
				all = append(all, b...)
			}
			slices.Sort(all)
			if len(slices.Compact(all)) != tt.conns {
				t.Fatalf("told %v, want each of %d once", all, tt.conns)
			}
		})
	}
}

// A connection that arrives during the drain is drained too, and the order is random, not the
// listener's.
func TestDrainTakesLateArrivalsAndShuffles(t *testing.T) {
	f := &fakeConns{}
	for i := range 100 {
		f.open = append(f.open, i)
	}
	arrived := false
	list := func() []int {
		if len(f.batches) == 2 && !arrived {
			arrived = true
			f.mu.Lock()
			f.open = append(f.open, 1000)
			f.mu.Unlock()
		}
		return f.list()
	}
	Drain(context.Background(), 4*drainTick, list, f.tell)
	if len(f.open) != 0 {
		t.Fatalf("still open: %v", f.open)
	}
	if slices.IsSorted(f.batches[0]) {
		t.Fatalf("the first batch came in the listener's order: %v", f.batches[0])
	}
}

// A cancelled drain stops between batches; the caller's last pass ends the rest.
func TestDrainStopsWhenItsContextEnds(t *testing.T) {
	f := &fakeConns{}
	for i := range 10 {
		f.open = append(f.open, i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Drain(ctx, 10*drainTick, f.list, f.tell)
	if len(f.batches) != 1 || len(f.open) != 9 {
		t.Fatalf("batches %v, open %v: want one batch of 1", f.batches, f.open)
	}
}

// The pace is even: half the window has told half the connections, not all of them.
func TestDrainKeepsAnEvenPace(t *testing.T) {
	f := &fakeConns{}
	for i := range 15 {
		f.open = append(f.open, i)
	}
	Drain(context.Background(), 40*drainTick, f.list, f.tell)
	told := 0
	for _, b := range f.batches[:20] {
		told += len(b)
	}
	if told != 8 { // ceil(15 * 20 / 40)
		t.Fatalf("the first half of the batches told %d of 15, want 8: %v", told, f.batches)
	}
}
