package prometheus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Listener serves only GET /metrics on an address of its own, so a scraper on a private
// network reaches the metrics and nothing else of the HTTP API.
type Listener struct {
	addr string
	srv  *http.Server
	ln   net.Listener
	log  *slog.Logger
}

// Listener returns a stopped listener for addr.
func (m *Metrics) Listener(addr string, log *slog.Logger) *Listener {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	return &Listener{addr: addr, log: log, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
}

// Start binds the address, so the port is taken when Start returns, then serves in the
// background until Stop.
func (l *Listener) Start(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", l.addr)
	if err != nil {
		return fmt.Errorf("metrics: listen %s: %w", l.addr, err)
	}
	l.ln = ln
	go func() {
		if err := l.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			l.log.Error("metrics listener stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	l.log.Info("metrics listening", "addr", ln.Addr().String())
	return nil
}

// Stop waits for scrapes in flight until ctx ends.
func (l *Listener) Stop(ctx context.Context) error {
	if err := l.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("metrics: shutdown: %w", err)
	}
	return nil
}

// Addr is the bound address after Start (useful with port 0).
func (l *Listener) Addr() string {
	if l.ln != nil {
		return l.ln.Addr().String()
	}
	return l.addr
}
