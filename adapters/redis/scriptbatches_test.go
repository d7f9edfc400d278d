package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeExec is a batchExec that records each batch's calls (by their first argument), answers
// each call its own argument, fails the batches named in fail, and holds its first batch until
// open is closed.
type fakeExec struct {
	mu      sync.Mutex
	batches [][]string
	fail    map[int]error // by batch index
	first   sync.Once
	open    chan struct{}
}

func (f *fakeExec) exec(_ context.Context, batch []*batchedCall) {
	f.first.Do(func() { <-f.open })
	f.mu.Lock()
	i := len(f.batches)
	names := make([]string, len(batch))
	for j, c := range batch {
		names[j] = c.args[0]
	}
	f.batches = append(f.batches, names)
	err := f.fail[i]
	f.mu.Unlock()
	for _, c := range batch {
		c.reply, c.err = []string{"re:" + c.args[0]}, err
	}
}

// queuedIn is how many calls wait for the next batch of group; -1 when none is in flight.
func queuedIn(b *scriptBatches, group string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.groups[group]; q != nil {
		return len(q.waiting)
	}
	return -1
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestScriptBatches: the first call of an idle group goes at once and alone; the calls that
// come while it is in flight go in the next batches, at most maxBatch each, in arrival order
// (so a topic's sends get their seqs in that order, DESIGN §4 step 4); each caller gets its own
// reply, a failed batch fails only its own callers, and another group never waits for this one
// (issue 30 part 2).
func TestScriptBatches(t *testing.T) {
	tests := []struct {
		name   string
		queued int // calls that come while the first is in flight
		fail   map[int]error
		want   []int // batch sizes
	}{
		{name: "lone call", queued: 0, want: []int{1}},
		{name: "a few gathered", queued: 3, want: []int{1, 3}},
		{name: "bounded by maxBatch", queued: maxBatch + 5, want: []int{1, maxBatch, 5}},
		{name: "a failed batch fails its own callers", queued: maxBatch + 5,
			fail: map[int]error{1: errors.New("boom")}, want: []int{1, maxBatch, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newScriptBatches()
			f := &fakeExec{fail: tt.fail, open: make(chan struct{})}
			n := 1 + tt.queued
			replies, errs := make([][]string, n), make([]error, n)
			var wg sync.WaitGroup
			call := func(i int) {
				wg.Go(func() {
					replies[i], errs[i] = b.do(t.Context(), "g", newBatchedCall(nil, []string{fmt.Sprint(i)}), f.exec)
				})
			}
			call(0)
			waitFor(t, func() bool { return queuedIn(b, "g") == 0 })
			for i := 1; i < n; i++ {
				call(i)
				waitFor(t, func() bool { return queuedIn(b, "g") == i })
			}
			// Another group goes at once while "g" is held.
			other := &fakeExec{open: make(chan struct{})}
			close(other.open)
			if r, err := b.do(t.Context(), "h", newBatchedCall(nil, []string{"x"}), other.exec); err != nil || !slices.Equal(r, []string{"re:x"}) {
				t.Fatalf("other group: %v, %v", r, err)
			}
			close(f.open)
			wg.Wait()

			var sizes []int
			var order []string
			failed := map[string]bool{}
			for i, names := range f.batches {
				sizes = append(sizes, len(names))
				order = append(order, names...)
				if tt.fail[i] != nil {
					for _, name := range names {
						failed[name] = true
					}
				}
			}
			if !slices.Equal(sizes, tt.want) {
				t.Fatalf("batch sizes %v; want %v", sizes, tt.want)
			}
			for i, name := range order {
				if name != fmt.Sprint(i) {
					t.Fatalf("calls sent in order %v; want arrival order", order)
				}
			}
			for i := range n {
				name := fmt.Sprint(i)
				if failed[name] {
					if errs[i] == nil {
						t.Errorf("call %d of a failed batch: no error", i)
					}
				} else if errs[i] != nil || !slices.Equal(replies[i], []string{"re:" + name}) {
					t.Errorf("call %d: %v, %v; want its own reply", i, replies[i], errs[i])
				}
			}
			if q := queuedIn(b, "g"); q != -1 {
				t.Errorf("group still marked in flight (%d queued) after its last batch", q)
			}
		})
	}
}
