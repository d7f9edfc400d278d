// Package singleflight runs one load per key at a time: callers that ask for a key while its load
// runs wait for it and share its result. A cache entry that expires under load then costs one
// query, not one per request that arrives before the first answer (a stampede that, with a
// short TTL and a bounded connection pool, stalls the send path every few seconds).
package singleflight

import (
	"context"
	"sync"
)

// Group deduplicates concurrent loads by key. The zero value is ready to use.
type Group[V any] struct {
	mu    sync.Mutex
	calls map[string]*call[V]
}

type call[V any] struct {
	done chan struct{}
	val  V
	err  error
}

// Do returns the result of load for key, running it only when no load of key is running; a
// caller that finds one running waits for it instead, until ctx ends. The result is not kept:
// the next Do after the load finished loads again.
func (g *Group[V]) Do(ctx context.Context, key string, load func(ctx context.Context) (V, error)) (V, error) {
	g.mu.Lock()
	if c, ok := g.calls[key]; ok {
		g.mu.Unlock()
		select {
		case <-c.done:
			return c.val, c.err
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
	}
	if g.calls == nil {
		g.calls = make(map[string]*call[V])
	}
	c := &call[V]{done: make(chan struct{})}
	g.calls[key] = c
	g.mu.Unlock()

	c.val, c.err = load(ctx)
	g.mu.Lock()
	delete(g.calls, key)
	g.mu.Unlock()
	close(c.done)
	return c.val, c.err
}
