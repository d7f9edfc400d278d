// Package websocket is the browser transport of PROTOCOL.md §7 on coder/websocket: GET /ws
// with subprotocol imd.v1, one frame of PROTOCOL §2 per binary message. Its connections are sessions
// like the TCP listener's: they are handed to the same dispatch.Dispatcher, so commands,
// codes, rate limits, kicks and pushes are the same on both transports. Each connection has a
// reader goroutine (the handler's) and a writer goroutine; nothing else waits on its socket.
package websocket

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cws "github.com/coder/websocket"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/adapters/protocol/dispatch"
	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/ports"
)

// Subprotocol is the one subprotocol the endpoint speaks (PROTOCOL §7).
const Subprotocol = "imd.v1"

// Config configures the endpoint; zero fields take the defaults of seed 003 §2.4.
type Config struct {
	// AllowedOrigins are the Origin patterns browsers may connect from, matched as
	// coder/websocket's OriginPatterns (path.Match on the host, or on scheme://host when the
	// pattern holds "://"). A page of the host it connects to is always allowed; so is a
	// client that sends no Origin (not a browser).
	AllowedOrigins []string
	// IdleTimeout closes a connection that sent nothing for this long. Default 120s.
	IdleTimeout time.Duration
	// WriteTimeout bounds one message's write; a browser that stops reading is closed after
	// it. Default 10s.
	WriteTimeout time.Duration
	// OutboundBytes and OutboundFrames bound what may wait unsent on one connection; pushes
	// beyond them are dropped (outbound_drop_total). Defaults 4 MiB and 1024 frames.
	OutboundBytes  int
	OutboundFrames int
}

func (c Config) withDefaults() Config {
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 120 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.OutboundBytes <= 0 {
		c.OutboundBytes = 4 << 20
	}
	if c.OutboundFrames <= 0 {
		c.OutboundFrames = 1024
	}
	return c
}

// unreadFactor: a client whose unread responses exceed this many outbound byte limits is
// sending requests without reading the answers, and is closed (as on TCP).
const unreadFactor = 4

// connIDBase keeps WebSocket connection ids apart from the TCP listener's in logs.
const connIDBase = 1 << 48

// Endpoint serves GET /ws. It is an http.Handler; Stop ends its connections.
type Endpoint struct {
	cfg      Config
	commands *dispatch.Dispatcher
	metrics  ports.Metrics
	log      *slog.Logger

	nextID   atomic.Uint64
	open     atomic.Int64
	stopping atomic.Bool
	mu       sync.Mutex
	conns    map[*session.Conn]struct{}
	wg       sync.WaitGroup
}

// New returns the endpoint; its connections are served by commands, which must be started.
func New(cfg Config, commands *dispatch.Dispatcher, metrics ports.Metrics, log *slog.Logger) *Endpoint {
	return &Endpoint{cfg: cfg.withDefaults(), commands: commands, metrics: metrics, log: log,
		conns: make(map[*session.Conn]struct{})}
}

// ServeHTTP upgrades the request and serves the connection until it closes.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e.stopping.Load() || !e.commands.Serving() {
		e.refuse(w, r, http.StatusServiceUnavailable, "unavailable", "server is starting or shutting down, retry")
		return
	}
	if !offers(r.Header, Subprotocol) {
		e.refuse(w, r, http.StatusBadRequest, "subprotocol", "the WebSocket subprotocol "+Subprotocol+" is required")
		return
	}
	ws, err := cws.Accept(w, r, &cws.AcceptOptions{
		Subprotocols:   []string{Subprotocol},
		OriginPatterns: e.cfg.AllowedOrigins,
		// Frame bodies are zlib-compressed by the protocol already.
		CompressionMode: cws.CompressionDisabled,
	})
	if err != nil {
		// Accept has answered: 403 for an Origin outside the allow-list, 4xx otherwise.
		e.metrics.Inc("ws_refused_total", "handshake")
		e.log.Debug("websocket upgrade refused", "real_ip", realIP(r).String(), "origin", r.Header.Get("Origin"), "err", err)
		return
	}
	e.serve(r.Context(), ws, realIP(r))
}

// refuse answers a request that is not upgraded, in the error shape of the HTTP API.
func (e *Endpoint) refuse(w http.ResponseWriter, r *http.Request, status int, reason, msg string) {
	e.metrics.Inc("ws_refused_total", reason)
	e.log.Debug("websocket upgrade refused", "real_ip", realIP(r).String(), "reason", reason)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	code := "40001"
	if status == http.StatusServiceUnavailable {
		code = "50301"
	}
	_, _ = w.Write([]byte(`{"code":` + code + `,"msg":"` + msg + `"}`))
}

// serve runs one upgraded connection: this goroutine reads, a second one writes.
func (e *Endpoint) serve(reqCtx context.Context, ws *cws.Conn, ip netip.Addr) {
	ws.SetReadLimit(readLimit)
	l := newLink(ws, e.cfg.WriteTimeout, unreadFactor*e.cfg.OutboundBytes)
	out := session.NewConn(connIDBase+e.nextID.Add(1), l, session.Limits{Bytes: e.cfg.OutboundBytes, Frames: e.cfg.OutboundFrames}, e.metrics)
	c := e.commands.NewClient("ws", out)
	c.SetRealIP(ip)
	if !e.track(out) {
		_ = ws.Close(cws.StatusGoingAway, "shutdown")
		return
	}
	defer e.untrack(out)
	e.metrics.Set("ws_connections", float64(e.open.Add(1)))
	defer func() { e.metrics.Set("ws_connections", float64(e.open.Add(-1))) }()

	// The writer outlives the request's context until the link is closed and drained.
	writeCtx, stopWriter := context.WithCancel(context.WithoutCancel(reqCtx))
	defer stopWriter()
	written := make(chan struct{})
	go func() { defer close(written); l.run(writeCtx) }()

	e.log.Debug("websocket connection accepted", "connection_id", out.ID(), "real_ip", ip.String())
	err := e.read(c, ws, l)
	e.commands.Close(c)
	l.closeWith(closeOf(err))
	// Give the writer the rest of its write timeout to flush the close; then cut it.
	select {
	case <-written:
	case <-time.After(e.cfg.WriteTimeout):
		stopWriter()
		<-written
	}
	id := out.Identity()
	e.log.Debug("websocket connection closed", "connection_id", out.ID(), "real_ip", ip.String(),
		"user_id", id.User, "device_id", id.Device, "err", err)
}

// read hands every frame to the dispatcher until the connection fails, idles out or sends a
// message that is not exactly one frame.
func (e *Endpoint) read(c *dispatch.Client, ws *cws.Conn, l *link) error {
	for {
		ctx, cancel := context.WithTimeout(c.Context(), e.cfg.IdleTimeout)
		typ, data, err := ws.Read(ctx)
		idle := ctx.Err() != nil && c.Context().Err() == nil
		cancel()
		switch {
		case idle:
			return errIdle
		case err != nil:
			return err
		}
		f, err := decodeMessage(typ, data)
		if err != nil {
			e.metrics.Inc("ws_refused_total", "message")
			e.log.Warn("bad websocket message, closing", "connection_id", c.Out().ID(), "real_ip", c.RealIP().String(), "err", err)
			return err
		}
		if c.Out().Closing() {
			continue // kicked: the KICK is on its way, the close follows it
		}
		e.metrics.Inc("tcp_frames_in_total")
		e.commands.Dispatch(c, f)
	}
}

// errIdle is a connection that sent nothing for IdleTimeout.
var errIdle = errors.New("websocket: idle")

// closeOf is the close frame that ends a connection after err.
func closeOf(err error) (cws.StatusCode, string) {
	var bad *badMessage
	switch {
	case errors.As(err, &bad):
		return bad.code, bad.err.Error()
	case errors.Is(err, errIdle):
		return cws.StatusPolicyViolation, "idle"
	}
	return cws.StatusNormalClosure, ""
}

func (e *Endpoint) track(out *session.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping.Load() {
		return false
	}
	e.conns[out] = struct{}{}
	e.wg.Add(1)
	return true
}

func (e *Endpoint) untrack(out *session.Conn) {
	e.mu.Lock()
	delete(e.conns, out)
	e.mu.Unlock()
	e.wg.Done()
}

// kickReasonShutdown tells a client the server is going away and it should reconnect.
const kickReasonShutdown = "shutdown"

// Drain sends the open connections KICK {"reason":"shutdown"} in small random batches over
// window while the endpoint still serves the others (docs/NODES.md "Rolling restarts"); Stop
// ends any that arrived after the last batch.
func (e *Endpoint) Drain(ctx context.Context, window time.Duration) {
	protocol.Drain(ctx, window, e.openConns, kickForShutdown)
}

func (e *Endpoint) openConns() []*session.Conn {
	e.mu.Lock()
	defer e.mu.Unlock()
	open := make([]*session.Conn, 0, len(e.conns))
	for out := range e.conns {
		open = append(open, out)
	}
	return open
}

func kickForShutdown(out *session.Conn) { out.Kick(kickReasonShutdown) }

// Stop refuses new connections, sends every open one KICK {"reason":"shutdown"} (seed 003
// §18), and waits until they are closed or ctx ends.
func (e *Endpoint) Stop(ctx context.Context) error {
	e.stopping.Store(true)
	for _, out := range e.openConns() {
		kickForShutdown(out)
	}
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// offers reports whether the client offered subprotocol.
func offers(h http.Header, subprotocol string) bool {
	for _, v := range h.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(p) == subprotocol {
				return true
			}
		}
	}
	return false
}

// realIP is the client's address: X-Real-IP from the local Nginx, believed from a loopback
// peer only (PROTOCOL §7), else the peer itself.
func realIP(r *http.Request) netip.Addr {
	peer := netip.Addr{}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		peer = ap.Addr().Unmap()
	} else if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		peer, _ = netip.ParseAddr(host)
	}
	if peer.IsLoopback() {
		if ip, err := netip.ParseAddr(strings.TrimSpace(r.Header.Get("X-Real-IP"))); err == nil {
			return ip.Unmap()
		}
	}
	return peer
}
