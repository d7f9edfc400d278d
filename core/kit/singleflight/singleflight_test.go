package singleflight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestConcurrentCallersShareOneLoad(t *testing.T) {
	// synctest.Wait is the barrier: every caller is blocked, the first in the load, the rest
	// waiting for it, before the load finishes.
	synctest.Test(t, func(t *testing.T) {
		var g Group[int]
		var loads atomic.Int64
		release := make(chan struct{})
		load := func(context.Context) (int, error) {
			loads.Add(1)
			<-release
			return 42, nil
		}
		const callers = 20
		var wg sync.WaitGroup
		results := make(chan int, callers)
		for range callers {
			wg.Go(func() {
				v, err := g.Do(context.Background(), "k", load)
				if err != nil {
					t.Error(err)
				}
				results <- v
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		close(results)
		for v := range results {
			if v != 42 {
				t.Fatalf("a caller got %d; want 42", v)
			}
		}
		if n := loads.Load(); n != 1 {
			t.Fatalf("%d loads for %d concurrent callers; want 1", n, callers)
		}
	})
}

func TestDo(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		results []error // what successive loads of one key return, one Do after another
		want    int     // loads run
	}{
		{"a finished load is not kept", []error{nil, nil}, 2},
		{"an error is returned and the next Do loads again", []error{boom, nil}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g Group[string]
			loads := 0
			for _, res := range tt.results {
				_, err := g.Do(context.Background(), "k", func(context.Context) (string, error) {
					loads++
					return "v", res
				})
				if !errors.Is(err, res) {
					t.Fatalf("Do = %v; want %v", err, res)
				}
			}
			if loads != tt.want {
				t.Fatalf("%d loads; want %d", loads, tt.want)
			}
		})
	}
}

func TestKeysLoadApart(t *testing.T) {
	var g Group[string]
	release, loading := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = g.Do(context.Background(), "slow", func(context.Context) (string, error) { close(loading); <-release; return "", nil })
	}()
	defer close(release)
	<-loading
	v, err := g.Do(context.Background(), "fast", func(context.Context) (string, error) { return "fast", nil })
	if err != nil || v != "fast" {
		t.Fatalf("Do(fast) = %q, %v while another key loads", v, err)
	}
}

func TestAWaitEndsWithItsContext(t *testing.T) {
	var g Group[int]
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	go func() {
		_, _ = g.Do(context.Background(), "k", func(context.Context) (int, error) { close(started); <-release; return 1, nil })
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Do(ctx, "k", func(context.Context) (int, error) { return 2, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do while another load hangs = %v; want the context's error", err)
	}
}
