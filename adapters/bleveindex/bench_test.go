package bleveindex

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/imdhq/imd/core/domain/fulltext"
)

// BenchmarkIndex256 writes the indexer's batch of 256 ~100-byte messages, as under W1.
func BenchmarkIndex256(b *testing.B) {
	x, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	ctx := context.Background()
	docs := make([]fulltext.Doc, 256)
	seq := int64(0)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		seq = fillBatch(docs, seq, 0)
		if err := x.Index(ctx, "t1", docs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N*len(docs)), "cpu-µs/doc")
}

// BenchmarkIndexWriters writes b.N batches of 256 into one tenant's index from 1, 2 and 4
// goroutines at once, as the indexer's writers do with full batches (issue 30 part 3): wall
// µs per document is what one index takes in a second, cpu-µs/doc what each costs.
func BenchmarkIndexWriters(b *testing.B) {
	for _, writers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			x, err := New(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer x.Close()
			ctx := context.Background()
			cpu0, wall0 := cpuTime(b), time.Now()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					docs := make([]fulltext.Doc, 256)
					seq := int64(0)
					for range (b.N + writers - 1 - w) / writers {
						seq = fillBatch(docs, seq, w)
						if err := x.Index(ctx, "t1", docs); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			n := float64(b.N * 256)
			b.ReportMetric(float64(time.Since(wall0).Microseconds())/n, "wall-µs/doc")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/n, "cpu-µs/doc")
		})
	}
}

// fillBatch fills docs with the next ~100-byte messages after seq of P2P topics of writer w.
func fillBatch(docs []fulltext.Doc, seq int64, w int) int64 {
	now := time.Now()
	for i := range docs {
		seq++
		docs[i] = fulltext.Doc{
			Topic: fmt.Sprintf("p2p_%d_%d", i, 1000*w+i+1), Seq: seq, Month: 203101, CreatedAt: now.Add(time.Duration(seq) * time.Millisecond),
			Text: fmt.Sprintf("bench message %d from the load generator, about a hundred bytes of text 你好世界 %d", seq, i),
		}
	}
	return seq
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

// BenchmarkSearchTimeRange searches an index of 100,000 messages, one every 26 s over 30 days,
// for a word all of them have and for one only a few have, within ranges from an hour to the
// whole index, in a new index and in one of the numeric-time shape: what a range costs a search
// where it is cut into term ranges rather than numeric ones (change 43).
func BenchmarkSearchTimeRange(b *testing.B) {
	const docs, every = 100_000, 26 * time.Second
	start := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, sh := range []struct {
		name    string
		mapping func() *mapping.IndexMappingImpl
	}{{"keyword", docMapping}, {"numeric", numericTimeMapping}} {
		x := createdWith(b, sh.mapping, "t1")
		ctx := context.Background()
		batch := make([]fulltext.Doc, 256)
		for seq := int64(0); seq < docs; {
			for i := range batch {
				seq++
				batch[i] = fulltext.Doc{
					Topic: fmt.Sprintf("p2p_%d_%d", seq%500, seq%500+1), Seq: seq, Month: 203101, CreatedAt: start.Add(time.Duration(seq) * every),
					Text: fmt.Sprintf("message %d about the weekly report and friends", seq%1000),
				}
			}
			if err := x.Index(ctx, "t1", batch); err != nil {
				b.Fatal(err)
			}
		}
		for _, r := range []struct {
			name     string
			from, to time.Time
		}{
			{"hour", start.Add(240 * time.Hour), start.Add(241 * time.Hour)},
			{"day", start.Add(240*time.Hour + 7*time.Minute), start.Add(264*time.Hour + 11*time.Minute)},
			{"all", start.Add(-time.Hour), start.AddDate(0, 1, 1)},
			{"from", start.Add(100*time.Hour + 13*time.Second), time.Time{}},
		} {
			for _, text := range []string{"report", "message 7"} {
				b.Run(fmt.Sprintf("%s/%s/%s", sh.name, r.name, strings.ReplaceAll(text, " ", "_")), func(b *testing.B) {
					for b.Loop() {
						if _, err := x.Search(ctx, "t1", fulltext.Query{Text: text, From: r.from, To: r.to, Limit: 20}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
		if err := x.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
