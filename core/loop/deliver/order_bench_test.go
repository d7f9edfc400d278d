package deliver

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkSequencer measures the reorder step of a partition consumer: jobs of 64 topics
// whose seqs arrive in pairs swapped (every other job is held, then released by the next).
func BenchmarkSequencer(b *testing.B) {
	const topics = 64
	s := newSequencer(time.Second, maxHeldPerTopic)
	now := time.Now()
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("grp_%d", i+1)
		s.start(names[i], 0, now)
	}
	next := make([]int64, topics)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		t := i % topics
		i++
		// Seq n+2 first, then n+1: one hold and one release per pair.
		seq := next[t] + 2
		if i/topics%2 == 1 {
			seq = next[t] + 1
			next[t] += 2
		}
		s.add(orderJob(names[t], seq, seq), now)
	}
}
