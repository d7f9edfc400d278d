// Package http serves the Echo HTTP listener: the admin API of PROTOCOL §6 under /admin/v1,
// the client API under /api/v1 (client*.go), signed object URLs under /files/, the OpenAPI
// document of both APIs at /openapi.yaml, the /healthz, /readyz and /metrics probes, and Go's
// runtime profiles under /debug/pprof/ (admin key), the operator console under /console/
// (console.go), and for browsers a page at / linking what the listener serves, with the
// repository's documents under /docs/ (home.go).
package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/loop/migration"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/bots"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/webhooks"
	"github.com/imdhq/imd/ports"
)

// Server timeouts: generous enough for a month-table DDL behind /shards/advance, short
// enough that a slow or idle client cannot hold a connection forever.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
	readyProbeTimeout = 2 * time.Second
)

// Config of the HTTP listener.
type Config struct {
	Addr string
	// AdminAddr, when set, is a listener of its own for the operator's routes — the admin API,
	// the console and the runtime profiles — and Addr, the one Nginx exposes to clients, then
	// serves none of them (issue 33): the admin key is no longer the only thing between the
	// internet and the operator. Empty: Addr serves everything.
	AdminAddr string
	// AdminKey is the bearer token of the admin API; an empty key refuses every admin call.
	AdminKey string
	// RateLimits bound the client API (ratelimit.go); zero rates are unlimited.
	RateLimits ClientRateLimits
	// DevSignIn serves POST /dev/v1/tenants/{tenant}/signin on Addr (devsignin.go): a token for
	// any user id, for the web chat on a developer's machine. Never on in production.
	DevSignIn bool
}

// Deps are what the handlers serve.
type Deps struct {
	Admin   *admin.Service
	History *history.Service
	// Metrics serves GET /metrics; nil leaves the route out.
	Metrics http.Handler
	// RequestMetrics records every request (metrics.go); nil records nothing.
	RequestMetrics ports.Metrics
	// Ready checks the dependencies (e.g. pings) for /readyz; nil means nothing to check.
	Ready ReadyCheck
	// Listeners are the node's other listeners (the frame listener): each reports nil while it
	// accepts, and /readyz is 503 while any does not, so no client is routed to a node that
	// answers HTTP but cannot take connections.
	Listeners []Listening
	// Shards serves the shard lifecycle routes of admin_shards.go.
	Shards ShardOps
	// Inbox serves the conversation-list routes of admin_inbox.go; nil leaves them out.
	Inbox InboxOps
	// Social serves the client API and the admin additions of client*.go, admin_social.go
	// and admin_tenants.go.
	Social SocialDeps
	// Archive serves the archive, retention and long-term search routes of admin_archive.go.
	Archive ArchiveOps
	// References serves the reference routes of client_references.go.
	References ReferenceOps
	// Migration serves the legacy migration routes of admin_migration.go; nil answers 50301.
	Migration *migration.Service
	// Delivery serves the deliver queue routes of admin_delivery.go; nil answers 50301.
	Delivery ports.DeliverInspector
	// Nodes serves the node listing of admin_nodes.go.
	Nodes NodeOps
	// Webhooks serves the endpoint routes of admin_webhooks.go; nil answers 50301.
	Webhooks *webhooks.Service
	// PushTokens serves the push token routes of client_push.go and the dead letters of
	// admin_push.go; nil answers 50301.
	PushTokens PushTokenOps
	// Bots serves the bot routes of admin_bots.go; nil answers 50301.
	Bots *bots.Service
	// Browser serves the WebSocket transport, the JavaScript SDK and the web chat (browser.go).
	Browser Browser
}

// ReadyCheck reports whether the dependencies answer (Deps.Ready).
type ReadyCheck func(ctx context.Context) error

// Listening reports nil while a listener accepts (Deps.Listeners).
type Listening func() error

// Server is the HTTP listener. Start and Stop are called once each, from one goroutine.
type Server struct {
	cfg  Config
	d    Deps
	log  *slog.Logger
	echo *echo.Echo // what Addr serves
	// admin is what AdminAddr serves: the operator's routes and the probes; echo itself when
	// AdminAddr is empty.
	admin *echo.Echo
	srvs  []*http.Server
	lns   []net.Listener
	ready atomic.Bool
	// limits are the client API's request budgets.
	limits *clientLimiter
	// sessions are the signed-in operator consoles (console.go).
	sessions *consoleSessions
}

// New builds the server and its routes; nothing listens until Start.
func New(cfg Config, d Deps, log *slog.Logger) *Server {
	s := &Server{cfg: cfg, d: d, log: log, limits: newClientLimiter(cfg.RateLimits), sessions: newConsoleSessions()}
	s.echo = s.newEcho()
	s.admin = s.echo
	if cfg.AdminAddr != "" {
		s.admin = s.newEcho()
		s.probeRoutes(s.admin)
	}
	s.probeRoutes(s.echo)
	if s.d.Metrics != nil {
		s.echo.GET("/metrics", echo.WrapHandler(s.d.Metrics))
	}
	s.browserRoutes(s.echo)
	s.homeRoutes(s.echo)
	s.clientRoutes(s.echo)
	s.referenceRoutes(s.echo)
	s.devRoutes(s.echo)
	s.reactionRoutes(s.echo)
	s.adminRoutes(s.admin)
	return s
}

func (s *Server) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	// X-Real-IP is believed only from the loopback hop, i.e. the local Nginx; any other peer
	// could forge it, so its own address is used.
	e.IPExtractor = echo.ExtractIPFromRealIPHeader(echo.TrustLinkLocal(false), echo.TrustPrivateNet(false))
	e.Use(s.recordRequests, s.logRequests, s.recoverPanics)
	return e
}

// probeRoutes are the liveness and readiness probes, on every listener.
func (s *Server) probeRoutes(e *echo.Echo) {
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
}

// adminRoutes are the operator's: the runtime profiles, the console and the admin API.
func (s *Server) adminRoutes(e *echo.Echo) {
	s.pprofRoutes(e)
	s.consoleRoutes(e)
	s.tenantRoutes(e)
	t := e.Group("/admin/v1", s.requireAdminKey).Group("/tenants/:tenant", s.requireTenant)
	t.POST("/users", s.createUser)
	t.POST("/tokens", s.issueToken)
	t.POST("/friendships", s.addFriendship)
	t.POST("/groups", s.createGroup)
	t.POST("/groups/:group_id/members", s.adminAddMembers)
	t.GET("/topics/:topic/messages/:seq", s.getMessage)
	t.GET("/topics/:topic/messages", s.listMessages)
	t.POST("/topics/:topic/route/rebuild", s.rebuildRoute)
	t.GET("/shards", s.listShards)
	t.POST("/shards/advance", s.advanceMonth)
	s.shardRoutes(t)
	s.queryRoutes(t)
	s.inboxRoutes(t)
	s.adminSocialRoutes(t)
	s.archiveRoutes(t)
	s.migrationRoutes(t)
	s.deliveryRoutes(t)
	s.nodeRoutes(t)
	s.repairRoutes(t)
	s.webhookRoutes(t)
	s.pushRoutes(t)
	s.botRoutes(t)
}

// Start binds the listeners, so the ports are taken when Start returns, then serves in the
// background until Stop.
func (s *Server) Start(ctx context.Context) error {
	if err := s.serve(ctx, s.cfg.Addr, s.echo); err != nil {
		return err
	}
	if s.cfg.AdminAddr != "" {
		if err := s.serve(ctx, s.cfg.AdminAddr, s.admin); err != nil {
			return errors.Join(err, s.Stop(ctx))
		}
	}
	return nil
}

func (s *Server) serve(ctx context.Context, addr string, h http.Handler) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("http: listen %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.lns, s.srvs = append(s.lns, ln), append(s.srvs, srv)
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	s.log.Info("http listening", "addr", ln.Addr().String(), "admin", h == s.admin)
	return nil
}

// Stop reports not-ready, stops accepting, and waits for requests in flight until ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	s.ready.Store(false)
	var errs []error
	for _, srv := range s.srvs {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http: shutdown: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Addr is the bound address after Start (useful with port 0), else the configured one.
func (s *Server) Addr() string {
	if len(s.lns) > 0 {
		return s.lns[0].Addr().String()
	}
	return s.cfg.Addr
}

// AdminAddr is the admin listener's bound address after Start, else the configured one ("" when
// Addr serves the admin routes).
func (s *Server) AdminAddr() string {
	if len(s.lns) > 1 {
		return s.lns[1].Addr().String()
	}
	return s.cfg.AdminAddr
}

// MarkReady turns /readyz on: the last start hook, once everything else has started.
func (s *Server) MarkReady(context.Context) error {
	s.ready.Store(true)
	return nil
}

// WithdrawReady turns /readyz off: the first stop hook, so the balancer stops sending new
// clients here before anything stops.
func (s *Server) WithdrawReady(context.Context) error {
	s.ready.Store(false)
	s.log.Info("readiness withdrawn")
	return nil
}

// healthz answers while the process serves at all (liveness).
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when started and every dependency answers (readiness).
func (s *Server) readyz(c echo.Context) error {
	if !s.ready.Load() {
		return c.JSON(http.StatusServiceUnavailable, errorBody{Code: apperr.Busy, Msg: "not ready"})
	}
	for _, serving := range s.d.Listeners {
		if err := serving(); err != nil {
			s.log.Warn("readiness check failed", "err", err)
			return c.JSON(http.StatusServiceUnavailable, errorBody{Code: apperr.Busy, Msg: "listener not accepting"})
		}
	}
	if s.d.Ready != nil {
		ctx, cancel := context.WithTimeout(c.Request().Context(), readyProbeTimeout)
		defer cancel()
		if err := s.d.Ready(ctx); err != nil {
			s.log.Warn("readiness check failed", "err", err)
			return c.JSON(http.StatusServiceUnavailable, errorBody{Code: apperr.Busy, Msg: "dependency unavailable"})
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}
