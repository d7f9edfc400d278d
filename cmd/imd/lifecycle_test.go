package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/config"
)

// drainRecorder is a listener that records the drains it was asked for.
type drainRecorder struct {
	mu      sync.Mutex
	windows []time.Duration
	at      time.Time
}

func (d *drainRecorder) Drain(_ context.Context, window time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.windows = append(d.windows, window)
	d.at = time.Now()
}

func TestDrainClientsWaitsTheGraceThenDrainsEveryListener(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.Shutdown{UnreadyGrace: 200 * time.Millisecond, DrainWindow: 3 * time.Second}
	tcp, ws := &drainRecorder{}, &drainRecorder{}
	began := time.Now()
	drainClients(t.Context(), cfg, log, tcp, ws)
	for _, l := range []*drainRecorder{tcp, ws} {
		if len(l.windows) != 1 || l.windows[0] != cfg.DrainWindow {
			t.Fatalf("drains %v, want one over %v", l.windows, cfg.DrainWindow)
		}
		// Not before the grace: the balancer must have seen /readyz fail first.
		if l.at.Sub(began) < cfg.UnreadyGrace {
			t.Fatalf("drained %v after the stop began, before the grace of %v", l.at.Sub(began), cfg.UnreadyGrace)
		}
	}

	// A stop whose time is up skips the drain; the listeners' Stop kicks everyone.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	late := &drainRecorder{}
	drainClients(ctx, cfg, log, late)
	if len(late.windows) != 0 {
		t.Fatalf("drained %v after the stop's context ended", late.windows)
	}
}
