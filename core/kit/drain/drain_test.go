package drain

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// recorder is a listener that records the drains it was asked for.
type recorder struct {
	mu      sync.Mutex
	windows []time.Duration
	at      time.Time
}

func (d *recorder) Drain(_ context.Context, window time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.windows = append(d.windows, window)
	d.at = time.Now()
}

func TestClients(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		// cancelled: the stop's time is up during the grace.
		cancelled bool
		wantDrain bool
	}{
		{name: "drained after the grace", cfg: Config{UnreadyGrace: 50 * time.Millisecond, Window: 3 * time.Second}, wantDrain: true},
		{name: "not drained when the stop ends during the grace", cfg: Config{UnreadyGrace: time.Hour, Window: 3 * time.Second}, cancelled: true},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			tcp, ws := &recorder{}, &recorder{}
			began := time.Now()
			done := make(chan struct{})
			go func() { defer close(done); Clients(ctx, tc.cfg, log, tcp, ws) }()
			if tc.cancelled {
				cancel()
			}
			<-done
			for _, l := range []*recorder{tcp, ws} {
				if !tc.wantDrain {
					if len(l.windows) != 0 {
						t.Fatalf("drained %v after the stop's context ended", l.windows)
					}
					continue
				}
				if len(l.windows) != 1 || l.windows[0] != tc.cfg.Window {
					t.Fatalf("drains %v, want one over %v", l.windows, tc.cfg.Window)
				}
				// Not before the grace: the balancer must have seen /readyz fail first.
				if l.at.Sub(began) < tc.cfg.UnreadyGrace {
					t.Fatalf("drained %v after the stop began, before the grace of %v", l.at.Sub(began), tc.cfg.UnreadyGrace)
				}
			}
		})
	}
}
