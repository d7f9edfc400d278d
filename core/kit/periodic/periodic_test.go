package periodic

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestEveryTenantRereadsTheTenantsAndStops: each round calls each for the tenants of that
// round, and the loop returns when its ctx ends.
func TestEveryTenantRereadsTheTenantsAndStops(t *testing.T) {
	var mu sync.Mutex
	names := []string{"acme"}
	seen := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		EveryTenant(ctx, time.Millisecond, func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), names...)
		}, func(_ context.Context, tenant string) {
			select {
			case seen <- tenant:
			default: // the test reads no more: drop, rounds go on
			}
		})
	}()
	if got := <-seen; got != "acme" {
		t.Fatalf("first round called %q, want acme", got)
	}
	mu.Lock()
	names = append(names, "globex")
	mu.Unlock()
	for got := ""; got != "globex"; got = <-seen {
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("EveryTenant did not return after its ctx ended")
	}
}
