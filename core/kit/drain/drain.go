// Package drain moves a stopping node's clients to the nodes that stay (issue 33, docs/NODES.md
// "Rolling restarts"): it waits out the unready grace, so the balancer's health check sees
// /readyz fail before any client is told to reconnect, then drains every listener over the
// window at once, each its own clients.
package drain

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Listener is a listener whose clients can be told to reconnect over a window.
type Listener interface {
	Drain(ctx context.Context, window time.Duration)
}

// Config is shutdown.unready_grace and shutdown.drain_window.
type Config struct {
	UnreadyGrace time.Duration // serving on, not ready, before the first client is told
	Window       time.Duration // over which each listener spreads its clients' reconnects
}

// Clients waits out cfg.UnreadyGrace, then drains every listener over cfg.Window in parallel.
// A stop whose ctx ends during the grace drains nothing: the listeners' Stop kicks everyone.
func Clients(ctx context.Context, cfg Config, log *slog.Logger, listeners ...Listener) {
	log.InfoContext(ctx, "draining", "unready_grace", cfg.UnreadyGrace, "drain_window", cfg.Window)
	grace := time.NewTimer(cfg.UnreadyGrace)
	defer grace.Stop()
	select {
	case <-grace.C:
	case <-ctx.Done():
		return
	}
	var wg sync.WaitGroup
	for _, l := range listeners {
		wg.Go(func() { l.Drain(ctx, cfg.Window) })
	}
	wg.Wait()
	log.InfoContext(ctx, "clients drained")
}
