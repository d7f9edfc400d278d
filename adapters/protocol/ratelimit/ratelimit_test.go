package ratelimit

import (
	"sync"
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	tests := []struct {
		name string
		rate Rate
		// at are the request times (offsets from the first request); want the answers.
		at   []time.Duration
		want []bool
	}{
		{
			name: "burst of Count, then refused",
			rate: Rate{Count: 3, Per: time.Second},
			at:   []time.Duration{0, 0, 0, 0},
			want: []bool{true, true, true, false},
		},
		{
			name: "one request comes back per interval",
			rate: Rate{Count: 2, Per: time.Second},
			at:   []time.Duration{0, 0, 0, 499 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond},
			want: []bool{true, true, false, false, true, false},
		},
		{
			name: "per minute",
			rate: Rate{Count: 60, Per: time.Minute},
			at:   append(repeat(0, 60), 0, time.Second),
			want: append(repeatBool(true, 60), false, true),
		},
		{
			name: "a full bucket does not save up beyond the burst",
			rate: Rate{Count: 2, Per: time.Second},
			at:   []time.Duration{time.Hour, time.Hour, time.Hour},
			want: []bool{true, true, false},
		},
		{
			name: "zero count is unlimited",
			rate: Rate{},
			at:   repeat(0, 1000),
			want: repeatBool(true, 1000),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLimit(tt.rate)
			var b Bucket
			for i, at := range tt.at {
				// Offsets start past zero, as a monotonic reading taken after the epoch does.
				if got := b.Allow(l, time.Millisecond+at); got != tt.want[i] {
					t.Fatalf("request %d at %v: allowed %v, want %v", i, at, got, tt.want[i])
				}
			}
		})
	}
}

func TestBucketRefund(t *testing.T) {
	l := NewLimit(Rate{Count: 1, Per: time.Second})
	var b Bucket
	now := time.Second
	if !b.Allow(l, now) {
		t.Fatal("first request refused")
	}
	b.Refund(l)
	if !b.Allow(l, now) {
		t.Fatal("refunded request not available again")
	}
	if b.Allow(l, now) {
		t.Fatal("budget of one allowed two")
	}
}

func TestSharedIsPerKey(t *testing.T) {
	s := NewShared[string](1024)
	l := NewLimit(Rate{Count: 2, Per: time.Second})
	now := time.Second
	for _, key := range []string{"a", "b"} {
		for i := range 2 {
			if !s.Allow(key, l, now) {
				t.Fatalf("%s request %d refused", key, i)
			}
		}
		if s.Allow(key, l, now) {
			t.Fatalf("%s over budget allowed", key)
		}
	}
	s.Refund("a", l)
	if !s.Allow("a", l, now) {
		t.Fatal("refund not applied")
	}
}

func TestSharedSweepAndBound(t *testing.T) {
	const maxKeys = shardCount * 2
	s := NewShared[int](maxKeys)
	l := NewLimit(Rate{Count: 1, Per: time.Second})
	now := time.Second
	for k := range 10 * maxKeys {
		if !s.Allow(k, l, now) {
			t.Fatalf("first request of key %d refused", k)
		}
	}
	if n := keys(s); n > maxKeys {
		t.Fatalf("table holds %d keys, bound %d", n, maxKeys)
	}

	s.Sweep(now) // nothing refilled yet
	if keys(s) == 0 {
		t.Fatal("sweep dropped buckets that are still spent")
	}
	s.Sweep(now + time.Second)
	if n := keys(s); n != 0 {
		t.Fatalf("%d refilled keys left after sweep", n)
	}
}

func TestSharedConcurrent(t *testing.T) {
	s := NewShared[int](1024)
	l := NewLimit(Rate{Count: 100, Per: time.Hour})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		allowed int
	)
	for range 8 {
		wg.Go(func() {
			n := 0
			for range 100 {
				if s.Allow(7, l, time.Second) {
					n++
				}
			}
			mu.Lock()
			allowed += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if allowed != 100 {
		t.Fatalf("allowed %d across goroutines, want exactly the budget of 100", allowed)
	}
}

func BenchmarkSharedAllow(b *testing.B) {
	s := NewShared[int](1 << 16)
	l := NewLimit(Rate{Count: 1 << 20, Per: time.Second})
	b.RunParallel(func(pb *testing.PB) {
		k := 0
		for pb.Next() {
			k++
			s.Allow(k&1023, l, time.Second)
		}
	})
}

func keys[K comparable](s *Shared[K]) int {
	n := 0
	for i := range s.shards {
		n += len(s.shards[i].buckets)
	}
	return n
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func repeatBool(v bool, n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = v
	}
	return out
}
