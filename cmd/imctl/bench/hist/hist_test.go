package hist

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestBucketsAreContiguousAndTight(t *testing.T) {
	// Every value must land in a bucket whose bounds contain it, buckets must
	// not go backwards, and a bucket may be at most 1/64 wide.
	prev := -1
	for _, v := range sampleValues() {
		i := bucketOf(v)
		if i < prev {
			t.Fatalf("bucket of %d is %d, below the bucket %d of a smaller value", v, i, prev)
		}
		prev = i
		hi := upperBound(i)
		lo := uint64(0)
		if i > 0 {
			lo = upperBound(i-1) + 1
		}
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d = [%d, %d]", v, i, lo, hi)
		}
		if width := hi - lo; v >= 1<<subBits && float64(width) > float64(lo)/float64(half)+1 {
			t.Fatalf("bucket %d = [%d, %d] is too wide", i, lo, hi)
		}
	}
	if got := bucketOf(1<<63 - 1); got >= nBuckets {
		t.Fatalf("largest value maps to bucket %d of %d", got, nBuckets)
	}
}

func sampleValues() []uint64 {
	var vs []uint64
	for v := uint64(0); v < 5000; v++ {
		vs = append(vs, v)
	}
	for shift := 13; shift < 63; shift++ {
		for _, off := range []uint64{0, 1, 7, 1 << (shift - 2), 1<<(shift-1) - 1} {
			vs = append(vs, 1<<shift+off)
		}
	}
	return append(vs, 1<<63-1)
}

func TestQuantiles(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		q       float64
		want    time.Duration
	}{
		{"empty", nil, 0.99, 0},
		{"single", []time.Duration{3 * time.Millisecond}, 0.5, 3 * time.Millisecond},
		{"p50 of 1..100 ms", spread(100, time.Millisecond), 0.5, 50 * time.Millisecond},
		{"p99 of 1..100 ms", spread(100, time.Millisecond), 0.99, 99 * time.Millisecond},
		{"p100 is the max", spread(100, time.Millisecond), 1, 100 * time.Millisecond},
		{"q 0 is the min", spread(100, time.Millisecond), 0, time.Millisecond},
		{"negative counts as zero", []time.Duration{-time.Second}, 0.5, 0},
		{"small exact values", []time.Duration{1, 2, 3, 4}, 0.75, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			for _, d := range tt.samples {
				h.Record(d)
			}
			got := h.Snapshot().Quantile(tt.q)
			if !within(got, tt.want, 0.016) {
				t.Fatalf("Quantile(%v) = %v, want %v ±1.6%%", tt.q, got, tt.want)
			}
			if got < tt.want && tt.want <= h.Snapshot().Max {
				t.Fatalf("Quantile(%v) = %v understates %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestQuantilesMatchSortedSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	samples := make([]time.Duration, 100_000)
	for i := range samples {
		// Log-normal-ish latencies from 10 µs to seconds.
		samples[i] = time.Duration(10_000 * (1 + rng.ExpFloat64()*rng.ExpFloat64()*200))
		h.Record(samples[i])
	}
	slices.Sort(samples)
	s := h.Snapshot()
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
		exact := samples[int(q*float64(len(samples)))-1]
		if got := s.Quantile(q); !within(got, exact, 0.016) {
			t.Errorf("p%v = %v, exact %v", q*100, got, exact)
		}
	}
	if s.Max != samples[len(samples)-1] {
		t.Errorf("Max = %v, want %v", s.Max, samples[len(samples)-1])
	}
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	if s.Mean() != sum/time.Duration(len(samples)) {
		t.Errorf("Mean = %v, want %v", s.Mean(), sum/time.Duration(len(samples)))
	}
}

func TestSubAndMerge(t *testing.T) {
	var h Histogram
	for range 100 {
		h.Record(time.Millisecond)
	}
	before := h.Snapshot()
	for range 100 {
		h.Record(10 * time.Millisecond)
	}
	after := h.Snapshot()

	interval := after.Sub(before)
	if interval.Count != 100 || interval.Sum != time.Second {
		t.Fatalf("interval count %d sum %v", interval.Count, interval.Sum)
	}
	if p50 := interval.Quantile(0.5); !within(p50, 10*time.Millisecond, 0.016) {
		t.Fatalf("interval p50 = %v, want ≈10ms", p50)
	}
	if interval.Max != 10*time.Millisecond {
		t.Fatalf("interval Max = %v, want capped at the real max", interval.Max)
	}
	if whole := after.Sub(Snapshot{}); whole.Count != 200 {
		t.Fatalf("Sub of the zero snapshot: count %d", whole.Count)
	}

	merged := before.Merge(interval)
	if merged.Count != after.Count || merged.Quantile(0.25) != after.Quantile(0.25) || merged.Quantile(0.75) != after.Quantile(0.75) {
		t.Fatalf("merge differs from the whole: %+v", merged.Summary())
	}
	if got := (Snapshot{}).Merge(Snapshot{}); got.Count != 0 || got.Quantile(0.5) != 0 {
		t.Fatalf("merge of empties = %+v", got.Summary())
	}
}

func TestConcurrentRecord(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 10_000 {
				h.Record(time.Duration(w*10_000+i) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	s := h.Snapshot()
	if s.Count != 80_000 || s.Max != 79_999*time.Microsecond {
		t.Fatalf("count %d max %v", s.Count, s.Max)
	}
}

func TestSummary(t *testing.T) {
	var h Histogram
	for _, d := range spread(1000, time.Millisecond) {
		h.Record(d)
	}
	sum := h.Snapshot().Summary()
	if sum.Count != 1000 || sum.MaxMs != 1000 || sum.P50Ms < 500 || sum.P50Ms > 508 || sum.P999Ms < 999 {
		t.Fatalf("summary = %+v", sum)
	}
	if (Snapshot{}).Summary() != (Summary{}) {
		t.Fatal("summary of nothing is not zero")
	}
}

func spread(n int, unit time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * unit
	}
	return out
}

func within(got, want time.Duration, rel float64) bool {
	diff := float64(got - want)
	return diff <= rel*float64(want)+1 && -diff <= rel*float64(want)+1
}
