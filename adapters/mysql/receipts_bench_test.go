package mysql

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkReadBy10000 is READ_STATE's store cost in a 10,000-member group (issue 31,
// docs/BENCHMARKS.md section 28): members' watermarks spread over seqs 0..99, one op is one
// ReadBy of seq 50 — the two counts, and the 200 reader ids where the group would be small
// enough to list them.
func BenchmarkReadBy10000(b *testing.B) {
	const members, conv = 10_000, 900
	c, tenant := newTestCluster(b)
	t, err := c.tenant(tenant)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for start := 1; start <= members; start += 1000 {
		var rows []string
		for u := start; u < start+1000; u++ {
			rows = append(rows, fmt.Sprintf("(%d, %d, %d, NOW(3))", conv, u, u%100))
		}
		if _, err := t.db.ExecContext(ctx, "INSERT INTO t_conversation_members (conversation_id, user_id, last_read_seq, joined_at) VALUES "+strings.Join(rows, ",")); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := t.db.ExecContext(ctx, "ANALYZE TABLE t_conversation_members"); err != nil {
		b.Fatal(err)
	}
	r := newTestReceipts(b, c)
	for _, limit := range []int{0, 200} {
		b.Run(fmt.Sprintf("limit-%d", limit), func(b *testing.B) {
			for range b.N {
				got, err := r.ReadBy(ctx, tenant, conv, 50, 1, limit)
				if err != nil || got.Of != members-1 || got.Read != members/2 {
					b.Fatalf("%d of %d, %v", got.Read, got.Of, err)
				}
			}
		})
	}
}
