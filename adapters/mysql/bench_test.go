package mysql

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/topic"
)

// Senders of the benchmarks: one closed-loop client, and 100 and 1000 concurrent ones (DESIGN
// §10 W1 has 1000). Each sender writes its own P2P conversation, so every append also moves a
// conversation's last message, as in the server.
var benchSenders = []int{1, 100, 1000}

// BenchmarkAppendGroupCommit measures the store as the server uses it: concurrent appends
// share transactions.
func BenchmarkAppendGroupCommit(b *testing.B) {
	benchAppend(b, func(s *MessageStore, _ *writer) appendFunc {
		return func(ctx context.Context, tenant string, m message.Message) error {
			_, err := s.Append(ctx, tenant, m, "h")
			return err
		}
	})
}

// BenchmarkAppendOneTxPerMessage is the baseline: every message in its own transaction, the
// transactions running concurrently on the pool.
func BenchmarkAppendOneTxPerMessage(b *testing.B) {
	benchAppend(b, func(_ *MessageStore, w *writer) appendFunc {
		return func(ctx context.Context, _ string, m message.Message) error {
			_, err := w.writeAlone(&appendReq{ctx: ctx, msg: m, hash: "h"}, false)
			return err
		}
	})
}

type appendFunc func(ctx context.Context, tenant string, m message.Message) error

func benchAppend(b *testing.B, newAppend func(*MessageStore, *writer) appendFunc) {
	for _, senders := range benchSenders {
		b.Run(fmt.Sprintf("senders=%d", senders), func(b *testing.B) {
			c, tenant := newTestCluster(b)
			ctx := context.Background()
			shards := NewShardStore(c)
			if err := shards.EnsureTable(ctx, tenant, testMonth); err != nil {
				b.Fatal(err)
			}
			if err := shards.SetState(ctx, tenant, testMonth, shard.Prepared, shard.Writable); err != nil {
				b.Fatal(err)
			}
			s := NewMessageStore(c, MessageStoreOptions{})
			defer s.Close()
			td, err := c.tenant(tenant)
			if err != nil {
				b.Fatal(err)
			}
			appendOne := newAppend(s, &writer{opts: s.opts, stats: &s.stats, t: td, month: testMonth})
			dir := NewDirectory(c)
			convs := make([]int64, senders)
			for i := range senders {
				conv, err := dir.EnsureP2P(ctx, tenant, int64(2*i+1), int64(2*i+2), int64(1000+i))
				if err != nil {
					b.Fatal(err)
				}
				convs[i] = conv.ID
			}

			var sent, msgID atomic.Int64
			seqs := make([]int64, senders) // each sender owns its topic's counter
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for i := range senders {
				wg.Go(func() {
					topicName := topic.ForPair(int64(2*i+1), int64(2*i+2))
					for sent.Add(1) <= int64(b.N) {
						seqs[i]++
						m := testMessage(topicName, seqs[i], msgID.Add(1))
						m.GroupID, m.ConversationID = 0, convs[i]
						if err := appendOne(ctx, tenant, m); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			if st := s.Stats(); st.Transactions > 0 {
				b.ReportMetric(float64(st.Appends)/float64(st.Transactions), "msgs/tx")
			}
		})
	}
}
