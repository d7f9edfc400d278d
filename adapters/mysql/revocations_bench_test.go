package mysql

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkRevocation is what a connection's AUTH pays for revocation (issue 18): the two
// primary-key reads of the deny-list, on a list holding 10,000 tokens and 1,000 user cut-offs.
func BenchmarkRevocation(b *testing.B) {
	c, tenant := newTestCluster(b)
	r := NewRevocations(c)
	ctx := context.Background()
	expires := time.Now().Add(time.Hour)
	for i := range 10_000 {
		if err := r.RevokeToken(ctx, tenant, fmt.Sprintf("tok%d", i), expires); err != nil {
			b.Fatal(err)
		}
		if i%10 == 0 {
			if err := r.RevokeUser(ctx, tenant, int64(i), time.Now(), time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := range b.N {
		// Mostly tokens that are not revoked, as in production.
		if _, _, err := r.Revocation(ctx, tenant, fmt.Sprintf("live%d", i), int64(i%20_000)); err != nil {
			b.Fatal(err)
		}
	}
}
