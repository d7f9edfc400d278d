// Package hist is a log-bucket latency histogram in the spirit of HDR
// Histogram: constant memory, about 1% relative error, lock-free recording
// from many goroutines, and snapshots that can be subtracted to get the
// figures of an interval.
package hist

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// subBits sets the precision: each power of two is split into 2^(subBits-1)
// buckets, so a bucket is at most 1/64 (≈1.6%) wide relative to its values.
const subBits = 7

const (
	half     = 1 << (subBits - 1)
	nBuckets = (64-subBits+1)*half + half
)

// bucketOf maps a non-negative value to its bucket. Values below 2^subBits
// get a bucket each; above, a bucket covers the values sharing the top
// subBits bits.
func bucketOf(v uint64) int {
	n := bits.Len64(v)
	if n <= subBits {
		return int(v)
	}
	shift := n - subBits
	return shift*half + int(v>>shift)
}

// upperBound is the largest value that falls in bucket i, which is what a
// quantile reports: it never understates a latency.
func upperBound(i int) uint64 {
	if i < 2*half {
		return uint64(i)
	}
	shift := i/half - 1
	mantissa := uint64(i - shift*half)
	return (mantissa+1)<<shift - 1
}

// Histogram records durations. The zero value is ready; it must not be copied
// after first use.
type Histogram struct {
	counts [nBuckets]atomic.Uint64
	count  atomic.Uint64
	sum    atomic.Uint64 // nanoseconds; overflows only after ~584 years of total latency
	max    atomic.Int64
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(uint64(v))].Add(1)
	h.count.Add(1)
	h.sum.Add(uint64(v))
	for {
		old := h.max.Load()
		if v <= old || h.max.CompareAndSwap(old, v) {
			return
		}
	}
}

// Snapshot copies the current state. Concurrent Records may be partly
// included, which only blurs a live figure by a few samples.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{counts: make([]uint64, nBuckets), Count: h.count.Load(), Sum: time.Duration(h.sum.Load()), Max: time.Duration(h.max.Load())}
	for i := range h.counts {
		s.counts[i] = h.counts[i].Load()
	}
	return s
}

// Snapshot is an immutable copy of a Histogram.
type Snapshot struct {
	counts []uint64
	Count  uint64
	Sum    time.Duration
	Max    time.Duration
}

// Sub returns the samples recorded between prev and s. The exact maximum of
// an interval is unknown, so Max becomes the upper bound of the highest
// bucket used in it.
func (s Snapshot) Sub(prev Snapshot) Snapshot {
	d := Snapshot{counts: make([]uint64, nBuckets), Count: s.Count - prev.Count, Sum: s.Sum - prev.Sum}
	for i := range s.counts {
		d.counts[i] = s.counts[i]
		if prev.counts != nil {
			d.counts[i] -= prev.counts[i]
		}
		if d.counts[i] > 0 {
			d.Max = time.Duration(upperBound(i))
		}
	}
	d.Max = min(d.Max, s.Max)
	return d
}

// Merge returns the samples of both snapshots.
func (s Snapshot) Merge(o Snapshot) Snapshot {
	m := Snapshot{counts: make([]uint64, nBuckets), Count: s.Count + o.Count, Sum: s.Sum + o.Sum, Max: max(s.Max, o.Max)}
	for i := range m.counts {
		if s.counts != nil {
			m.counts[i] += s.counts[i]
		}
		if o.counts != nil {
			m.counts[i] += o.counts[i]
		}
	}
	return m
}

// Quantile returns the smallest bucket bound at or below which a fraction q
// (0–1) of the samples lie, capped at Max; 0 when empty.
func (s Snapshot) Quantile(q float64) time.Duration {
	if s.Count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(s.Count)))
	rank = min(max(rank, 1), s.Count)
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(upperBound(i)), s.Max)
		}
	}
	return s.Max
}

// Mean is the average sample; 0 when empty.
func (s Snapshot) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / time.Duration(s.Count)
}

// Summary is the usual digest of a latency distribution, in milliseconds so
// that reports read naturally.
type Summary struct {
	Count  uint64  `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P95Ms  float64 `json:"p95_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// Summary digests the snapshot.
func (s Snapshot) Summary() Summary {
	return Summary{
		Count:  s.Count,
		MeanMs: Millis(s.Mean()),
		P50Ms:  Millis(s.Quantile(0.50)),
		P95Ms:  Millis(s.Quantile(0.95)),
		P99Ms:  Millis(s.Quantile(0.99)),
		P999Ms: Millis(s.Quantile(0.999)),
		MaxMs:  Millis(s.Max),
	}
}

// Millis converts d to fractional milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
