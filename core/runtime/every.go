package runtime

import (
	"context"
	"time"
)

// EveryTenant calls each for every tenant tenants names, every interval until ctx ends; the
// first round runs one interval after the start. tenants is read on every round, so a tenant
// provisioned meanwhile is in the next one.
func EveryTenant(ctx context.Context, interval time.Duration, tenants func() []string, each func(ctx context.Context, tenant string)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, tenant := range tenants() {
			each(ctx, tenant)
		}
	}
}
