package bleveindex

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/fulltext"
)

// BenchmarkIndex256 writes the indexer's batch of 256 ~100-byte messages, as under W1.
func BenchmarkIndex256(b *testing.B) {
	x, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	ctx, now := context.Background(), time.Now()
	docs := make([]fulltext.Doc, 256)
	seq := int64(0)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		for i := range docs {
			seq++
			docs[i] = fulltext.Doc{
				Topic: fmt.Sprintf("p2p_%d_%d", i, i+1), Seq: seq, Month: 203101, CreatedAt: now.Add(time.Duration(seq) * time.Millisecond),
				Text: fmt.Sprintf("bench message %d from the load generator, about a hundred bytes of text 你好世界 %d", seq, i),
			}
		}
		if err := x.Index(ctx, "t1", docs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N*len(docs)), "cpu-µs/doc")
}

// cpuTime is the process's CPU time so far: the index merges and persists in goroutines of its
// own, whose cost belongs to the documents as much as the caller's.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
