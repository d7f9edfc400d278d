// Package periodic runs a function on a ticker until its context ends, once per round or once
// per tenant per round: the loop shape of every background pass.
package periodic

import (
	"context"
	"time"
)

// Every calls fn every interval until ctx ends; the first call is one interval after the
// start.
func Every(ctx context.Context, interval time.Duration, fn func(ctx context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}

// EveryTenant calls each for every tenant tenants names, every interval until ctx ends.
// tenants is read on every round, so a tenant provisioned meanwhile is in the next one.
func EveryTenant(ctx context.Context, interval time.Duration, tenants func() []string, each func(ctx context.Context, tenant string)) {
	Every(ctx, interval, func(ctx context.Context) {
		for _, tenant := range tenants() {
			each(ctx, tenant)
		}
	})
}

// Sleep waits d or until ctx ends, and says which: nil after d, ctx's error when it ended
// first (at once for a d that is not positive and a ctx that has ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
