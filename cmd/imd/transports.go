package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/adapters/fxdeps"
	httpapi "github.com/imdhq/imd/adapters/http"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/adapters/websocket"
	jssdk "github.com/imdhq/imd/clients/js"
	"github.com/imdhq/imd/clients/webchat"
	"github.com/imdhq/imd/core/kit/background"
	"github.com/imdhq/imd/core/loop/cluster"
	"github.com/imdhq/imd/ports"
)

// transports are the TCP and HTTP listeners, the WebSocket endpoint (PROTOCOL §7: it hands
// its connections to the TCP listener's dispatcher, so both share one session registry) and
// the metrics-only listener. They start in seed 003 §18 order after the tenants' loops: HTTP →
// TCP → ready; stop runs backwards: not ready → WebSocket and TCP drained → HTTP.
func transports() fx.Option {
	return fx.Options(
		fx.Provide(
			tcpConfig,
			fxdeps.As(fxdeps.Inject(tcpserver.New), fx.Self(), new(ports.Pusher), new(cluster.Local), new(ports.Kicker)),
			// The deliver side pushes through the cross-node pusher, which hands pushes for
			// devices on other nodes to those nodes; it is bound once both exist.
			func() *cluster.LatePusher { return &cluster.LatePusher{} },
			func(l *cluster.LatePusher) ports.DevicePusher { return l },
			func(cfg config.Config, tcp *tcpserver.Server, m ports.Metrics, log *slog.Logger) *websocket.Endpoint {
				w := cfg.HTTP.WebSocket
				return websocket.New(websocket.Config{AllowedOrigins: w.AllowedOrigins, IdleTimeout: w.IdleTimeout,
					WriteTimeout: w.WriteTimeout, OutboundFrames: cfg.TCP.OutboundLimit}, tcp.Dispatcher(), m, log)
			},
			func(ws *websocket.Endpoint) httpapi.Browser {
				return httpapi.Browser{WebSocket: ws, SDK: jssdk.Files, Chat: webchat.Files}
			},
			func(cfg config.Config) httpapi.Config {
				user, ip := cfg.RateLimit.HTTP()
				return httpapi.Config{Addr: cfg.HTTP.Addr, AdminKey: cfg.AdminKey, RateLimits: httpapi.ClientRateLimits{User: user, IP: ip}}
			},
			fxdeps.Gather[httpapi.ShardOps](),
			// /readyz is 503 while the frame listener does not accept.
			fx.Annotate(func(tcp *tcpserver.Server) httpapi.Listening { return tcp.Serving }, fx.ResultTags(`group:"listeners"`)),
			fxdeps.Inject(httpapi.New),
		),
		fx.Invoke(func(l *cluster.LatePusher, p *cluster.Pusher) { l.Bind(p) }, runServer, runMetricsListener),
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

func runServer(lc fx.Lifecycle, http *httpapi.Server, tcp *tcpserver.Server, ws *websocket.Endpoint, exit fx.Shutdowner) {
	lc.Append(fx.Hook{OnStart: http.Start, OnStop: http.Stop})
	lc.Append(fx.Hook{OnStart: tcp.Start, OnStop: tcp.Stop})
	// WebSocket clients are kicked before the TCP listener stops the dispatcher they share.
	lc.Append(fx.StopHook(ws.Stop))
	// A frame listener that stopped accepting ends the process (exit 1) for its supervisor to
	// restart; readiness has already dropped through tcp.Serving.
	watch := background.New(func(ctx context.Context) {
		select {
		case <-tcp.Lost():
			_ = exit.Shutdown(fx.ExitCode(1))
		case <-ctx.Done():
		}
	})
	lc.Append(fx.Hook{OnStart: watch.Start, OnStop: watch.Stop})
	lc.Append(fx.Hook{OnStart: http.MarkReady, OnStop: http.WithdrawReady})
}

// runMetricsListener runs the metrics-only listener when http.metrics_addr is set.
func runMetricsListener(lc fx.Lifecycle, cfg config.Config, m http.Handler, log *slog.Logger) {
	if cfg.HTTP.MetricsAddr == "" {
		return
	}
	l := httpapi.NewMetricsOnly(cfg.HTTP.MetricsAddr, m, log)
	lc.Append(fx.Hook{OnStart: l.Start, OnStop: l.Stop})
}
