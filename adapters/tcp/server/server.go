// Package server is the client TCP listener of PROTOCOL.md on gnet: PROXY header, TLS and
// frames (seed 003 §2.3, §6–§8), handed to the transport-neutral dispatcher (package
// adapters/protocol/dispatch: commands, sessions, rate limits, the task pool), which it builds
// and which the WebSocket endpoint shares. It serves both listener modes: `tls: native`, where it
// terminates TLS itself after the PROXY header (package tlsconn), and `tls: off`, where Nginx
// terminated TLS and forwards plaintext frames.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/adapters/protocol/dispatch"
	"github.com/imdhq/imd/adapters/tcp/server/tlsconn"
	"github.com/imdhq/imd/core/domain/delivery"
)

// Config is the listener's configuration; zero fields take the defaults of seed 003 §2.4/§19.
type Config struct {
	// Addr is "host:port" for TCP or "unix:/path" for a unix socket.
	Addr string
	// ProxyProtocol requires a PROXY v1/v2 header before the first frame (PROTOCOL §1).
	ProxyProtocol bool
	// ProxyTimeout bounds the wait for the PROXY header. Default 3s.
	ProxyTimeout time.Duration
	// IdleTimeout closes a connection that sent nothing for this long. Default 120s
	// (clients heartbeat every 30s).
	IdleTimeout time.Duration
	// KeepAlive is the TCP keep-alive period; it keeps Nginx's stream alive. Default 30s.
	KeepAlive time.Duration
	// Multicore runs one event loop per CPU instead of one.
	Multicore bool
	// ReusePort sets SO_REUSEPORT. Off by default: it also lets a second process bind the same
	// port without an error.
	ReusePort bool
	// SocketRecvBuffer and SocketSendBuffer size the kernel buffers; 0 keeps the OS default.
	SocketRecvBuffer int
	SocketSendBuffer int
	// OutboundBytes and OutboundFrames bound what may wait unsent on one connection; pushes
	// beyond them are dropped (outbound_drop_total). Defaults 4 MiB and 1024 frames.
	OutboundBytes  int
	OutboundFrames int
	// TLS, when set, is the `tls: native` mode: the server terminates TLS (1.2 at least) after
	// the PROXY header. Nil is `tls: off`: frames arrive in plaintext.
	TLS *tls.Config
	// HandshakeTimeout bounds a TLS handshake. Default 10s.
	HandshakeTimeout time.Duration

	// The commands' settings, handed to the dispatcher the listener builds; see
	// dispatch.Config for their meaning and defaults.
	CompressMin    int
	Workers, Queue int
	RequestTimeout time.Duration
	PushAckTimeout time.Duration
	PushAckWindow  int
	RateLimits     RateLimits
}

func (c Config) withDefaults() Config {
	protocol.Default(&c.ProxyTimeout, 3*time.Second)
	protocol.Default(&c.IdleTimeout, 120*time.Second)
	protocol.Default(&c.KeepAlive, 30*time.Second)
	protocol.Default(&c.HandshakeTimeout, 10*time.Second)
	protocol.Default(&c.OutboundBytes, 4<<20)
	protocol.Default(&c.OutboundFrames, 1024)
	return c
}

// listenURL turns Addr into gnet's scheme://address form.
func (c Config) listenURL() (string, error) {
	if path, ok := strings.CutPrefix(c.Addr, "unix:"); ok {
		if path == "" {
			return "", errors.New("tcp server: unix address without a path")
		}
		return "unix://" + path, nil
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return "", fmt.Errorf("tcp server: address %q: %w", c.Addr, err)
	}
	return "tcp://" + c.Addr, nil
}

// tickInterval is how often timeouts are checked: fine enough that a connection outlives its
// timeout by at most a tenth, coarse enough to cost nothing.
func (c Config) tickInterval() time.Duration {
	d := min(c.IdleTimeout, c.ProxyTimeout) / 10
	return min(max(d, 10*time.Millisecond), time.Second)
}

// Deps are the use cases and ports the commands call.
type Deps = dispatch.Deps

// MissedPushes takes the pushes devices never acknowledged (Deps.Missed).
type MissedPushes = dispatch.MissedPushes

// RateLimits and Budgets bound the commands' request rates (dispatch.RateLimits).
type (
	RateLimits = dispatch.RateLimits
	Budgets    = dispatch.Budgets
)

// Server is the client TCP listener. It is also the ports.Pusher of this node.
type Server struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	commands *dispatch.Dispatcher
	tls      *tlsconn.Terminator // nil in tls: off mode
	// plain lends TLS connections a buffer to decrypt into; a connection keeps its own only
	// while it holds part of a frame.
	plain sync.Pool

	nextConnID atomic.Uint64
	conns      sync.Map // connection id → *connection, for the timeout sweep
	open       atomic.Int64
	stopping   atomic.Bool

	bootMu  sync.Mutex
	engine  gnet.Engine
	booted  bool
	aborted bool
	addr    net.Addr
	bootCh  chan struct{}
	done    chan struct{} // closed when gnet.Run returns
	runErr  error         // gnet.Run's result, readable after done
	// lost is closed when the engine ended after boot without Stop asking: the listener no
	// longer accepts and the node must not stay ready.
	lost chan struct{}
}

// New builds a server; nothing listens until Start.
func New(cfg Config, deps Deps, log *slog.Logger) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:  cfg,
		deps: deps,
		log:  log,
		commands: dispatch.New(dispatch.Config{
			CompressMin: cfg.CompressMin, Workers: cfg.Workers, Queue: cfg.Queue, RequestTimeout: cfg.RequestTimeout,
			PushAckTimeout: cfg.PushAckTimeout, PushAckWindow: cfg.PushAckWindow, RateLimits: cfg.RateLimits,
		}, deps, log),
		plain:  sync.Pool{New: func() any { return new([]byte) }},
		bootCh: make(chan struct{}),
		done:   make(chan struct{}),
		lost:   make(chan struct{}),
	}
	if cfg.TLS != nil {
		s.tls = tlsconn.NewTerminator(cfg.TLS)
	}
	return s
}

// Start listens and returns once the listener is up, or with the reason it could not be.
// Connections do not inherit ctx's cancellation; Stop ends them.
func (s *Server) Start(ctx context.Context) error {
	url, err := s.cfg.listenURL()
	if err != nil {
		return err
	}
	s.commands.Start(ctx)
	go func() {
		s.runErr = gnet.Run(&events{s: s}, url, s.options()...)
		// Noted before done closes, so once Stop returns a loss has been reported or never is.
		s.noteEngineEnd()
		close(s.done)
	}()
	select {
	case <-s.bootCh:
		s.log.InfoContext(ctx, "tcp listener up", "addr", s.Addr().String(), "proxy_protocol", s.cfg.ProxyProtocol,
			"tls", s.tlsMode())
		return nil
	case <-s.done:
		s.release(ctx)
		err := s.runErr
		if err == nil {
			err = errors.New("engine stopped before it was ready")
		}
		return fmt.Errorf("tcp server: listen on %s: %w", s.cfg.Addr, err)
	case <-ctx.Done():
		s.bootMu.Lock()
		s.aborted = true // an engine booting from now on shuts itself down
		booted := s.booted
		s.bootMu.Unlock()
		if booted {
			_ = s.stopEngine(context.WithoutCancel(ctx))
		}
		s.release(ctx)
		return fmt.Errorf("tcp server: start: %w", ctx.Err())
	}
}

// release frees what Start set up when the listener never came up.
func (s *Server) release(ctx context.Context) {
	_ = s.commands.Stop(ctx)
}

// options leave gnet's WithTCPKeepAlive out on purpose: gnet 2.9 sets it on the listener right
// after bind and overwrites bind's error with its own, so an address in use came out as
// "setsockopt: bad file descriptor", or, when the closed descriptor had been reused meanwhile,
// as a listener that never accepts. boot sets keep-alive on the bound listener instead.
// SO_REUSEADDR lets a restarted node bind while connections of the previous one linger in
// TIME_WAIT; it does not let two listeners share the port.
func (s *Server) options() []gnet.Option {
	opts := []gnet.Option{
		gnet.WithMulticore(s.cfg.Multicore),
		gnet.WithReuseAddr(true),
		gnet.WithReusePort(s.cfg.ReusePort),
		gnet.WithTicker(true),
		gnet.WithLogger(gnetLogger{s.log}),
	}
	if s.cfg.SocketRecvBuffer > 0 {
		opts = append(opts, gnet.WithSocketRecvBuffer(s.cfg.SocketRecvBuffer))
	}
	if s.cfg.SocketSendBuffer > 0 {
		opts = append(opts, gnet.WithSocketSendBuffer(s.cfg.SocketSendBuffer))
	}
	return opts
}

func (s *Server) tlsMode() string {
	if s.tls != nil {
		return "native"
	}
	return "off"
}

// Dispatcher serves the commands and holds the sessions of this node; the WebSocket endpoint
// hands it its connections too, so both transports share one registry. Stop stops it.
func (s *Server) Dispatcher() *dispatch.Dispatcher { return s.commands }

// Stop shuts down gracefully (seed 003 §18), after readiness was withdrawn: new connections
// are closed as soon as gnet accepts them (gnet cannot pause its listener), requests get
// 50301 and pushes fail over to the mailbox; the task pool drains so accepted requests still
// get their answers; every client is told to reconnect elsewhere with KICK {"reason":
// "shutdown"} and closed; then the engine stops. The deliver worker is stopped by its owner.
func (s *Server) Stop(ctx context.Context) error {
	if !s.stopping.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	if err := s.commands.Stop(ctx); err != nil {
		errs = append(errs, err)
	}
	s.bootMu.Lock()
	booted := s.booted
	s.bootMu.Unlock()
	if booted {
		s.kickAll(ctx)
		if err := s.stopEngine(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// kickReasonShutdown tells a client the server is going away and it should reconnect.
const kickReasonShutdown = "shutdown"

// shutdownKickGrace bounds the wait for kicked connections to close. A KICK closes its
// connection right after gnet takes the frame, so this is only reached when event loops lag.
const shutdownKickGrace = 3 * time.Second

// Drain tells the connections to reconnect elsewhere (KICK shutdown) in small random batches
// over window, while the listener still serves the others: the first step of a rolling
// restart's drain, after readiness was withdrawn (docs/NODES.md "Rolling restarts"). Stop's
// last pass ends any that arrived after the last batch.
func (s *Server) Drain(ctx context.Context, window time.Duration) {
	protocol.Drain(ctx, window, s.openConns, (*connection).endForShutdown)
}

// openConns lists the connections open now.
func (s *Server) openConns() []*connection {
	var out []*connection
	s.conns.Range(func(_, v any) bool {
		out = append(out, v.(*connection))
		return true
	})
	return out
}

// endForShutdown sends KICK shutdown to a connection that speaks frames and closes one that
// does not yet (PROXY header or TLS handshake still pending).
func (c *connection) endForShutdown() {
	if p := c.load(); p == phaseProxy || p == phaseHandshake || p == phaseClosed {
		_ = c.gc.Close()
	} else {
		c.out.Kick(kickReasonShutdown)
	}
}

// kickAll ends every connection (endForShutdown) and waits until they are gone or ctx ends.
func (s *Server) kickAll(ctx context.Context) {
	for _, c := range s.openConns() {
		c.endForShutdown()
	}
	ctx, cancel := context.WithTimeout(ctx, shutdownKickGrace)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.open.Load() > 0 {
		select {
		case <-ctx.Done():
			s.log.Warn("connections still open after the shutdown KICK", "open", s.open.Load())
			return
		case <-tick.C:
		}
	}
}

// stopEngine stops gnet and waits for Run to return. gnet's Engine.Stop polls every 500 ms;
// watching Run's own return ends the wait as soon as the engine is down.
func (s *Server) stopEngine(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := s.engine.Stop(ctx)
	select {
	case <-s.done:
		return nil
	default:
		return fmt.Errorf("tcp server: stop engine: %w", err)
	}
}

// Addr is the bound address (the real port when Addr asked for port 0); nil before Start.
func (s *Server) Addr() net.Addr {
	s.bootMu.Lock()
	defer s.bootMu.Unlock()
	return s.addr
}

// Push implements ports.Pusher over the session registry.
func (s *Server) Push(ctx context.Context, tenant string, t delivery.Target, p delivery.Push) delivery.Report {
	return s.commands.Sessions().Push(ctx, tenant, t, p)
}

// Kick sends KICK {reason} to a device and closes its connection; device 0 means every device
// of the user. It returns how many connections were kicked.
func (s *Server) Kick(tenant string, user int64, device uint64, reason string) int {
	return s.commands.Sessions().Kick(tenant, user, device, reason)
}

// PushReach implements ports.DevicePusher over the session registry.
func (s *Server) PushReach(ctx context.Context, tenant string, pushes ...delivery.Addressed) []delivery.Outcome {
	return s.commands.Sessions().PushReach(ctx, tenant, pushes...)
}

// PushDevice implements ports.DevicePusher over the session registry.
func (s *Server) PushDevice(ctx context.Context, tenant string, user int64, device uint64, p delivery.Push) int {
	return s.commands.Sessions().PushDevice(ctx, tenant, user, device, p)
}
