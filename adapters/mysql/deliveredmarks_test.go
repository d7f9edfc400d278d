package mysql

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestMarksOf(t *testing.T) {
	tests := []struct {
		name string
		in   []deliveredMark
		want []deliveredMark
	}{
		{"one", []deliveredMark{{1, 2, 3}}, []deliveredMark{{1, 2, 3}}},
		{"one row twice keeps the highest seq", []deliveredMark{{1, 2, 3}, {1, 2, 7}, {1, 2, 5}}, []deliveredMark{{1, 2, 7}}},
		{"rows in key order", []deliveredMark{{2, 1, 1}, {1, 3, 4}, {1, 2, 9}}, []deliveredMark{{1, 2, 9}, {1, 3, 4}, {2, 1, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var batch []*markReq[deliveredMark]
			for _, m := range tt.in {
				batch = append(batch, newMarkReq(m))
			}
			got := marksOf(batch)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("marksOf = %v, want %v", got, tt.want)
			}
		})
	}
}

// newTestReceipts is the receipts of c, their delivered marks written by a message store of
// their own.
func newTestReceipts(tb testing.TB, c *Cluster) *Receipts {
	store := NewMessageStore(c, MessageStoreOptions{})
	tb.Cleanup(func() { store.Close() })
	return NewReceipts(c, store)
}

// insertMembers makes users 1..n members of conv with no delivered mark.
func insertMembers(tb testing.TB, db *tenantDB, conv int64, n int) {
	tb.Helper()
	var rows []string
	for u := 1; u <= n; u++ {
		rows = append(rows, fmt.Sprintf("(%d, %d, NOW(3))", conv, u))
	}
	if _, err := db.db.ExecContext(context.Background(), "INSERT INTO t_conversation_members (conversation_id, user_id, joined_at) VALUES "+strings.Join(rows, ",")); err != nil {
		tb.Fatal(err)
	}
}

// TestRaiseDeliveredConcurrent raises many marks at once, so they meet in batches: each row
// ends at its highest seq whatever batch carried which, and no other row changes.
func TestRaiseDeliveredConcurrent(t *testing.T) {
	const users, raises, conv = 20, 10, 700
	c, tenant := newTestCluster(t)
	db, err := c.tenant(tenant)
	if err != nil {
		t.Fatal(err)
	}
	insertMembers(t, db, conv, users)
	insertMembers(t, db, conv+1, 1)
	r := newTestReceipts(t, c)
	ctx := context.Background()
	var wg sync.WaitGroup
	for u := int64(1); u <= users; u++ {
		for s := int64(1); s <= raises; s++ {
			wg.Go(func() {
				if err := r.RaiseDelivered(ctx, tenant, conv, u, (s*7)%raises+u); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	for u := int64(1); u <= users; u++ {
		if got, err := r.DeliveredTo(ctx, tenant, conv, u); err != nil || got != raises-1+u {
			t.Fatalf("user %d delivered %d, %v; want %d", u, got, err, raises-1+u)
		}
	}
	if got, err := r.DeliveredTo(ctx, tenant, conv+1, 1); err != nil || got != 0 {
		t.Fatalf("a row no mark named moved to %d, %v", got, err)
	}
}

// BenchmarkRaiseDelivered is the delivered mark of a PUSH_ACK (issue 30 part 4,
// docs/BENCHMARKS.md section 31): one op is one mark, from 64 goroutines at once as the acks of
// many P2P conversations come. batched goes through RaiseDelivered, so marks meet in the
// tenant's batches; one-per-ack sends each alone, one autocommit UPDATE per mark, as before.
// stmts/op is the UPDATEs each mark cost.
func BenchmarkRaiseDelivered(b *testing.B) {
	const users, conv = 1000, 800
	c, tenant := newTestCluster(b)
	db, err := c.tenant(tenant)
	if err != nil {
		b.Fatal(err)
	}
	insertMembers(b, db, conv, users)
	r := newTestReceipts(b, c)
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		raise func(m deliveredMark) error
	}{
		{"batched", func(m deliveredMark) error { return r.RaiseDelivered(ctx, tenant, m.conversationID, m.user, m.seq) }},
		{"one-per-ack", func(m deliveredMark) error {
			return execDeliveredMarks(ctx, db.db, []*markReq[deliveredMark]{newMarkReq(m)})
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var seq, stmts0 atomic.Int64
			stmts0.Store(updates(b, db))
			b.SetParallelism(32) // ×GOMAXPROCS goroutines
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					s := seq.Add(1)
					if err := tt.raise(deliveredMark{conversationID: conv, user: s%users + 1, seq: s}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(updates(b, db)-stmts0.Load())/float64(b.N), "stmts/op")
		})
	}
}

// updates is the server's count of UPDATE statements so far (every client's: run it alone).
func updates(tb testing.TB, db *tenantDB) int64 {
	tb.Helper()
	var name string
	var n int64
	if err := db.db.QueryRowContext(context.Background(), "SHOW GLOBAL STATUS LIKE 'Com_update_multi'").Scan(&name, &n); err != nil {
		tb.Fatal(err)
	}
	return n
}
