// Package topicsample walks the topics of a few months a little at a time, for the background
// passes that compare each topic with something (the route reconciliation, the list repair):
// each call takes the next topics of each month after where the last call stopped in it,
// wrapping at its end, so over many calls every topic of those months is visited, with keyset
// ranges only.
package topicsample

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/imdhq/imd/core/domain/month"
)

// Lister lists up to limit topics of month m in ascending order after `after` ("" = from the
// start), as ports.RouteMirror.TopicsIn does.
type Lister func(ctx context.Context, m month.Month, after string, limit int) ([]string, error)

// Cursors remembers, per tenant and month, the last topic a sample took. It is safe for
// concurrent use.
type Cursors struct {
	mu    sync.Mutex
	after map[key]string
}

type key struct {
	tenant string
	month  month.Month
}

// New returns cursors at the start of every month.
func New() *Cursors { return &Cursors{after: map[key]string{}} }

// Next takes the next topics of each of months for tenant, an equal share of total each, and
// returns them without repeats, at most total; a month's cursor wraps to its start when its
// topics run out. The cursors of the tenant's months not in months are forgotten.
func (c *Cursors) Next(ctx context.Context, tenant string, months []month.Month, total int, list Lister) ([]string, error) {
	if len(months) == 0 || total <= 0 {
		return nil, nil
	}
	c.mu.Lock()
	for k := range c.after {
		if k.tenant == tenant && !slices.Contains(months, k.month) {
			delete(c.after, k) // a month no longer sampled
		}
	}
	c.mu.Unlock()
	quota := (total + len(months) - 1) / len(months)
	seen := map[string]bool{}
	var out []string
	for _, m := range months {
		k := key{tenant: tenant, month: m}
		c.mu.Lock()
		after := c.after[k]
		c.mu.Unlock()
		topics, err := list(ctx, m, after, quota)
		if err != nil {
			return nil, fmt.Errorf("topics of %s: %w", m, err)
		}
		next := ""
		if len(topics) == quota {
			next = topics[len(topics)-1]
		}
		c.mu.Lock()
		c.after[k] = next
		c.mu.Unlock()
		for _, t := range topics {
			if !seen[t] && len(out) < total {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out, nil
}
