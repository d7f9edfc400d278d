package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/adapters/websocket"
	"github.com/imdhq/imd/core/admin"
	"github.com/imdhq/imd/core/archivereader"
	"github.com/imdhq/imd/core/cluster"
	"github.com/imdhq/imd/core/deliver"
	"github.com/imdhq/imd/core/directory"
	"github.com/imdhq/imd/core/history"
	"github.com/imdhq/imd/core/inbox"
	"github.com/imdhq/imd/core/inflight"
	"github.com/imdhq/imd/core/membership"
	"github.com/imdhq/imd/core/migration"
	"github.com/imdhq/imd/core/modify"
	"github.com/imdhq/imd/core/read"
	"github.com/imdhq/imd/core/routerepair"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/send"
	"github.com/imdhq/imd/core/shardmanager"
	"github.com/imdhq/imd/core/tenantregistry"
	"github.com/imdhq/imd/ports"
)

// memberCacheTTL bounds how stale a membership answer may be on another node; changes made
// through this node invalidate at once.
const memberCacheTTL = 5 * time.Second

// Options is the whole server: the real adapters, then the application around them.
func Options(cfg config.Config, log *slog.Logger) fx.Option {
	return fx.Options(Adapters(cfg), Application(cfg, log))
}

// Application is the core, the runtime and the transports over the ports; tests assemble it
// around the memory fakes instead of Adapters (app_test.go).
func Application(cfg config.Config, log *slog.Logger) fx.Option {
	return fx.Options(
		fx.Supply(cfg, log),
		Social(),
		Core(),
		Archive(),
		Migration(cfg),
		// The node lease and partitions are held before the runtime starts the deliver
		// workers, and given up after they stop (nodes.go).
		Nodes(),
		Runtime(),
		Transports(),
		Browser(),
		Observe(),
		fx.Invoke(refreshTenants),
	)
}

// systemClock is the node clock; month decisions never use it (they use Redis TIME).
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Core builds the use cases over the ports.
func Core() fx.Option {
	return fx.Options(
		fx.Provide(
			config.Config.ShardManager, config.Config.RouteRepairs, config.Config.Recall, config.Config.Send,
			func(d ports.Directory, c ports.Clock) *membership.Cache { return membership.New(d, c, memberCacheTTL) },
			as(inject(shardmanager.New), fx.Self(), new(send.Months)),
			fx.Annotate(inject(routerepair.New), fx.As(fx.Self()), fx.As(new(ports.RouteRepairs)),
				fx.As(new(shardmanager.Backlog)), fx.As(new(admin.RouteRebuilder)), fx.As(new(migration.Routes))),
			fx.Annotate(inject(send.New), fx.As(fx.Self()), fx.As(new(modify.Publisher)), fx.As(new(directory.TopicPublisher))),
			inject(admin.New),
			func(r *tenantregistry.Registry) ports.KnownTenant { return r.Known },
			func(r ports.MonthRows) admin.TableChecker { return r },
			inject(modify.New),
			fx.Annotate(inject(inbox.New), fx.As(fx.Self()), fx.As(new(httpapi.DialogLister)), fx.As(new(httpapi.DialogSettings))),
			fx.Annotate(inject(inbox.NewMailer), fx.As(fx.Self()), fx.As(new(ports.ControlEvents))),
			fx.Annotate(inject(read.New), fx.As(fx.Self()), fx.As(new(httpapi.MessageReader))),
			as(deliver.NewMissed, fx.Self(), new(tcpserver.MissedPushes)),
			// One per node: the send path and the deliver consumers of this process share it.
			inflight.New,
			queueView[ports.DeliverInspector],
			queueView[ports.DeliverLeaseHolders],
			gather[httpapi.NodeOps](),
		),
		// History reads archived months from the archive: inside this module its message store
		// and search are the archive-aware store (archive.go).
		fx.Module("history",
			fx.Provide(fx.Annotate(inject(history.New), fx.As(fx.Self()), fx.As(new(modify.Locator)))),
			fx.Decorate(func(s *archivereader.Store) (ports.MessageStore, ports.MessageSearch) { return s, s }),
		),
	)
}

// Transports builds the TCP and HTTP listeners and registers their start/stop in seed 003
// §18 order, after the runtime started the tenants' loops: HTTP → TCP → ready. Stop runs
// backwards: not ready → TCP drained → HTTP, then the runtime stops the loops.
func Transports() fx.Option {
	return fx.Options(
		fx.Provide(
			tcpConfig,
			as(inject(tcpserver.New), fx.Self(), new(ports.Pusher), new(cluster.Local), new(ports.Kicker)),
			func() *cluster.LatePusher { return &cluster.LatePusher{} },
			func(l *cluster.LatePusher) ports.DevicePusher { return l },
			newHTTP,
		),
		// The deliver side pushes through the cross-node pusher, which hands pushes for devices on
		// other nodes to those nodes (nodes.go).
		fx.Invoke(func(l *cluster.LatePusher, p *cluster.Pusher) { l.Bind(p) }, runServer),
	)
}

// tcpConfig is the listener's part of the file, with its certificates when TLS is native.
func tcpConfig(cfg config.Config) (tcpserver.Config, error) {
	c := cfg.TCP
	var certs *tls.Config
	if c.TLS == "native" {
		var err error
		if certs, err = tcpserver.LoadTLS(c.CertFile, c.KeyFile); err != nil {
			return tcpserver.Config{}, err
		}
	}
	return tcpserver.Config{
		Addr: c.Addr, ProxyProtocol: c.ProxyProtocol, IdleTimeout: c.IdleTimeout, KeepAlive: c.KeepAlive,
		Multicore: c.Multicore, CompressMin: c.CompressMinSize, OutboundFrames: c.OutboundLimit,
		Workers: cfg.TaskPool.Workers, Queue: cfg.TaskPool.Queue, RequestTimeout: c.RequestTimeout,
		TLS: certs, ProxyTimeout: c.ProxyTimeout, HandshakeTimeout: c.HandshakeTimeout, PushAckTimeout: c.PushAckTimeout,
		RateLimits: cfg.RateLimit.Frames(),
	}, nil
}

// queueView is the deliver queue as one of the views it also offers (operator, lease and
// backlog views); the Redis queue offers each.
func queueView[View any](q ports.DeliverQueue) (View, error) {
	v, ok := q.(View)
	if !ok {
		return v, fmt.Errorf("deliver queue %T does not offer %s", q, reflect.TypeFor[View]())
	}
	return v, nil
}

func newHTTP(cfg config.Config, a *admin.Service, h *history.Service, in *inbox.Service, sm *shardmanager.Manager, rr *routerepair.Service, metrics metricsHandler, requests ports.Metrics, ready readyCheck, tcp *tcpserver.Server, sd httpapi.SocialDeps, ao httpapi.ArchiveOps, ro httpapi.ReferenceOps, mig *migration.Service, dq ports.DeliverInspector, nodes httpapi.NodeOps, b httpapi.Browser, log *slog.Logger) *httpapi.Server {
	user, ip := cfg.RateLimit.HTTP()
	return httpapi.New(httpapi.Config{Addr: cfg.HTTP.Addr, AdminKey: cfg.AdminKey, RateLimits: httpapi.ClientRateLimits{User: user, IP: ip}},
		httpapi.Deps{Admin: a, History: h, Inbox: in, Metrics: metrics, RequestMetrics: requests, Ready: ready, Listeners: []func() error{tcp.Serving},
			Shards: httpapi.ShardOps{Manager: sm, Repair: rr}, Social: sd,
			Archive: ao, References: ro, Migration: mig, Delivery: dq, Nodes: nodes, Browser: b}, log)
}

type serverParams struct {
	fx.In
	LC   fx.Lifecycle
	HTTP *httpapi.Server
	TCP  *tcpserver.Server
	WS   *websocket.Endpoint
	Log  *slog.Logger
	Exit fx.Shutdowner
}

func runServer(p serverParams) {
	p.LC.Append(fx.Hook{OnStart: p.HTTP.Start, OnStop: p.HTTP.Stop})
	p.LC.Append(fx.Hook{OnStart: p.TCP.Start, OnStop: p.TCP.Stop})
	// WebSocket clients are kicked before the TCP listener stops the dispatcher they share.
	p.LC.Append(fx.StopHook(p.WS.Stop))
	// A frame listener that stopped accepting ends the process (exit 1) for its supervisor to
	// restart; readiness has already dropped through TCP.Serving.
	watch := runtime.NewBackground(func(ctx context.Context) {
		select {
		case <-p.TCP.Lost():
			_ = p.Exit.Shutdown(fx.ExitCode(1))
		case <-ctx.Done():
		}
	})
	p.LC.Append(fx.Hook{OnStart: watch.Start, OnStop: watch.Stop})
	p.LC.Append(fx.Hook{
		OnStart: func(context.Context) error { p.HTTP.SetReady(true); return nil },
		OnStop: func(context.Context) error {
			// Fail readiness first so the balancer stops sending new clients here.
			p.HTTP.SetReady(false)
			p.Log.Info("readiness withdrawn")
			return nil
		},
	})
}
