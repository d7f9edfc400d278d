package main

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/protocol/ratelimit"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/adapters/websocket"
	jssdk "github.com/imdhq/imd/clients/js"
	"github.com/imdhq/imd/clients/webchat"
	"github.com/imdhq/imd/core/kit/jobs"
	"github.com/imdhq/imd/core/loop/cluster"
	"github.com/imdhq/imd/core/loop/deliver"
	"github.com/imdhq/imd/core/loop/migration"
	"github.com/imdhq/imd/core/loop/retention"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/archiver"
	"github.com/imdhq/imd/core/usecase/authn"
	"github.com/imdhq/imd/core/usecase/bots"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/favorites"
	"github.com/imdhq/imd/core/usecase/forward"
	"github.com/imdhq/imd/core/usecase/groupfiles"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/core/usecase/longsearch"
	"github.com/imdhq/imd/core/usecase/modify"
	"github.com/imdhq/imd/core/usecase/nativepush"
	presencefeed "github.com/imdhq/imd/core/usecase/presence"
	"github.com/imdhq/imd/core/usecase/reactions"
	"github.com/imdhq/imd/core/usecase/read"
	"github.com/imdhq/imd/core/usecase/receipts"
	"github.com/imdhq/imd/core/usecase/reindex"
	"github.com/imdhq/imd/core/usecase/replies"
	"github.com/imdhq/imd/core/usecase/reports"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/core/usecase/tenantregistry"
	"github.com/imdhq/imd/core/usecase/typing"
	"github.com/imdhq/imd/core/usecase/uploads"
	"github.com/imdhq/imd/core/usecase/webhooks"
)

// The transports: the TCP and HTTP listeners and the WebSocket endpoint (PROTOCOL §7: it hands
// its connections to the TCP listener's dispatcher, so both share one session registry);
// lifecycle.go starts and stops them, and the metrics-only listener.

func newTCPServer(cfg config.Config, p Ports, log *slog.Logger, auth *authn.Service, sends *send.Service,
	h *history.Service, changes *modify.Service, marks *reactions.Service, fwd *forward.Service, box *inbox.Service, reads *read.Service,
	presence *cluster.Tracker, missed *deliver.Missed, feed *presencefeed.Service, typer *typing.Service,
	seen *receipts.Service, pushTokens *nativepush.Registry,
) (*tcpserver.Server, error) {
	c, err := tcpConfig(cfg)
	if err != nil {
		return nil, err
	}
	return tcpserver.New(c, tcpserver.Deps{
		Auth:       auth,
		Send:       sends,
		History:    h,
		Modify:     changes,
		Reactions:  marks,
		Forward:    fwd,
		Inbox:      box,
		Read:       reads,
		IDs:        p.IDs,
		Clock:      p.Clock,
		Metrics:    p.Metrics,
		Presence:   presence,
		Status:     feed,
		Typing:     typer,
		Receipts:   seen,
		PushTokens: pushTokens,
		Missed:     missed,
	}, log), nil
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
		RateLimits: frameBudgets(cfg.RateLimit),
	}, nil
}

// frameBudgets is the rate_limit section as the frame commands' budgets, per device and per
// client IP (TCP and WebSocket share the dispatcher that enforces them).
func frameBudgets(r config.RateLimit) tcpserver.RateLimits {
	budgets := func(msgPerSec, authPerSec, inboxPerMin, syncPerMin, historyPerMin int) tcpserver.Budgets {
		return tcpserver.Budgets{
			Send:         perSecond(msgPerSec),
			Auth:         perSecond(authPerSec),
			SyncInbox:    perMinute(inboxPerMin),
			SyncMessages: perMinute(syncPerMin),
			History:      perMinute(historyPerMin),
		}
	}
	ip := r.PerIP
	return tcpserver.RateLimits{
		Device: budgets(r.MessagePerSecond, r.AuthPerSecond, r.SyncInboxPerMinute, r.SyncMessagesPerMinute, r.HistoryPerMinute),
		IP:     budgets(ip.MessagePerSecond, ip.AuthPerSecond, ip.SyncInboxPerMinute, ip.SyncMessagesPerMinute, ip.HistoryPerMinute),
	}
}

// clientBudgets is the rate_limit section as the client HTTP API's budgets.
func clientBudgets(r config.RateLimit) httpapi.ClientRateLimits {
	return httpapi.ClientRateLimits{User: perSecond(r.HTTPPerSecond), IP: perSecond(r.PerIP.HTTPPerSecond)}
}

func perSecond(n int) ratelimit.Rate { return ratelimit.Rate{Count: n, Per: time.Second} }
func perMinute(n int) ratelimit.Rate { return ratelimit.Rate{Count: n, Per: time.Minute} }

func newWebSocket(cfg config.Config, p Ports, log *slog.Logger, tcp *tcpserver.Server) *websocket.Endpoint {
	w := cfg.HTTP.WebSocket
	return websocket.New(websocket.Config{
		AllowedOrigins: w.AllowedOrigins, IdleTimeout: w.IdleTimeout, WriteTimeout: w.WriteTimeout,
		OutboundFrames: cfg.TCP.OutboundLimit,
	}, tcp.Dispatcher(), p.Metrics, log)
}

func newHTTPServer(cfg config.Config, p Ports, log *slog.Logger, tcp *tcpserver.Server, ws *websocket.Endpoint,
	adm *admin.Service, h *history.Service, box *inbox.Service, migrations *migration.Service,
	social httpapi.SocialDeps, shards httpapi.ShardOps, archive httpapi.ArchiveOps, refs httpapi.ReferenceOps,
	nodes httpapi.NodeOps, hooks *webhooks.Service, pushTokens *nativepush.Registry, bots *bots.Service,
) *httpapi.Server {
	return httpapi.New(httpapi.Config{
		Addr: cfg.HTTP.Addr, AdminAddr: cfg.HTTP.AdminAddr, AdminKey: cfg.AdminKey, RateLimits: clientBudgets(cfg.RateLimit),
		DevSignIn: cfg.HTTP.DevSignIn,
	}, httpapi.Deps{
		Admin:          adm,
		History:        h,
		Metrics:        p.MetricsHandler,
		RequestMetrics: p.Metrics,
		Ready:          p.Ready,
		// /readyz is 503 while the frame listener does not accept.
		Listeners:  []httpapi.Listening{tcp.Serving},
		Shards:     shards,
		Inbox:      box,
		Social:     social,
		Archive:    archive,
		References: refs,
		Migration:  migrations,
		Delivery:   p.DeliverInspector,
		Nodes:      nodes,
		Webhooks:   hooks,
		PushTokens: pushTokens,
		Bots:       bots,
		Browser:    httpapi.Browser{WebSocket: ws, SDK: jssdk.Files, Chat: webchat.Files},
	}, log)
}

func newSocialOps(p Ports, auth *authn.Service, dir *directory.Service, reg *tenantregistry.Registry,
	sends *send.Service, up *uploads.Service, rep *reports.Service, box *inbox.Service, reads *read.Service,
	feed *presencefeed.Service, seen *receipts.Service,
) httpapi.SocialDeps {
	return httpapi.SocialDeps{
		Auth:      auth,
		Directory: dir,
		Tenants:   reg,
		Send:      sends,
		Uploads:   up,
		Reports:   rep,
		Files:     p.Files,
		Dialogs:   box,
		Settings:  box,
		Reads:     reads,
		Presence:  feed,
		Receipts:  seen,
	}
}

func newShardOps(manager *shardmanager.Manager, repair *routerepair.Service) httpapi.ShardOps {
	return httpapi.ShardOps{Manager: manager, Repair: repair}
}

func newArchiveOps(a *archiver.Service, r *retention.Service, x *reindex.Service, js *jobs.Jobs, s *longsearch.Searcher) httpapi.ArchiveOps {
	return httpapi.ArchiveOps{Archiver: a, Retention: r, Reindex: x, Jobs: js, Search: s}
}

func newReferenceOps(f *favorites.Service, g *groupfiles.Service, r *replies.Service, m *reactions.Service, fwd *forward.Service) httpapi.ReferenceOps {
	return httpapi.ReferenceOps{Favorites: f, Files: g, Replies: r, Reactions: m, Forward: fwd}
}

func newNodeOps(p Ports) httpapi.NodeOps {
	return httpapi.NodeOps{Inspect: p.NodeInspector, Holders: p.DeliverLeaseHolders}
}
