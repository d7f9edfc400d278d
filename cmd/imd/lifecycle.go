package main

import (
	"context"
	"log/slog"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/adapters/websocket"
	"github.com/imdhq/imd/core/kit/background"
	"github.com/imdhq/imd/core/kit/drain"
	"github.com/imdhq/imd/core/kit/jobs"
	"github.com/imdhq/imd/core/loop/cluster"
	"github.com/imdhq/imd/core/loop/deliver"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/usecase/nativepush"
	"github.com/imdhq/imd/core/usecase/presence"
	"github.com/imdhq/imd/core/usecase/tenantregistry"
)

// running is every component that starts or stops.
type running struct {
	fx.In
	Config    config.Config
	Log       *slog.Logger
	Ports     Ports
	Held      held
	Jobs      *jobs.Jobs
	Cluster   *cluster.Loops
	Presence  *presence.Service
	Registry  *tenantregistry.Registry
	Runtime   *runtime.Runtime
	AckWait   *deliver.AckWait
	Holders   *nativepush.Holders
	HTTP      *httpapi.Server
	TCP       *tcpserver.Server
	WebSocket *websocket.Endpoint
	Exit      fx.Shutdowner
}

// lifecycle is the one place where the server starts and stops (seed 003 §18). fx runs the
// start hooks in the order they are appended here and the stop hooks backwards, so each
// component starts after what it uses and stops before it. No constructor appends a hook.
func lifecycle(lc fx.Lifecycle, c running) {
	// 1. The connections: openAdapters opened them as it built them (MySQL, Redis, then the ID
	// generator); they close after everything built on them.
	for _, h := range c.Held.Connections {
		lc.Append(h)
	}
	// 2. Admin jobs still running are cancelled.
	lc.Append(fx.StopHook(c.Jobs.Close))
	// 3. The registry's database opens before the tenants load; at stop the push webhook's
	// queue is flushed once the deliver workers that feed it have stopped, and the search index
	// closes after the indexer's last batch.
	for _, h := range c.Held.Stores {
		lc.Append(h)
	}
	// 4. The node's cluster loops (lease, partitions, push channel): this node is known and holds
	// its deliver partitions before the workers start, and lets them go after.
	lc.Append(fx.Hook{OnStart: c.Cluster.Start, OnStop: c.Cluster.Stop})
	// The paced presence pushes after a registry heal (DESIGN §13 "Unknown until healed"),
	// which the keeper's passes start, stop before it.
	heals := background.New(c.Presence.RunHeals)
	lc.Append(fx.Hook{OnStart: heals.Start, OnStop: heals.Stop})
	// 5. Every tenant the registry knows is readied before the runtime starts the loops.
	lc.Append(fx.StartHook(c.Registry.Boot))
	// The native alerts of live pushes nobody acknowledged (DESIGN issue-32 "Native push"):
	// checked while the deliver workers that start the waits run; waits left at stop are
	// forgotten, never alerted twice.
	// The push token holders it waits for are loaded and refreshed meanwhile.
	ackWait, holders := background.New(c.AckWait.Run), background.New(c.Holders.Run)
	lc.Append(fx.Hook{OnStart: holders.Start, OnStop: holders.Stop})
	lc.Append(fx.Hook{OnStart: ackWait.Start, OnStop: ackWait.Stop})
	// 6. Every tenant's loops, before the listeners start and after they stop: every committed
	// message reaches the index feed and the deliver consumers, every push the listener gives up
	// becomes a mailbox row, no send is counted after the last stats flush.
	lc.Append(fx.Hook{OnStart: c.Runtime.Start, OnStop: c.Runtime.Stop})
	// 7. The listeners: HTTP, then TCP, then ready; at stop not ready, then WebSocket and TCP
	// drained, then HTTP.
	lc.Append(fx.Hook{OnStart: c.HTTP.Start, OnStop: c.HTTP.Stop})
	lc.Append(fx.Hook{OnStart: c.TCP.Start, OnStop: c.TCP.Stop})
	// WebSocket clients are kicked before the TCP listener stops the dispatcher they share.
	lc.Append(fx.StopHook(c.WebSocket.Stop))
	// A frame listener that stopped accepting ends the process (exit 1) for its supervisor to
	// restart; readiness has already dropped through tcp.Serving.
	watch := background.OnClose(c.TCP.Lost(), func() { _ = c.Exit.Shutdown(fx.ExitCode(1)) })
	lc.Append(fx.Hook{OnStart: watch.Start, OnStop: watch.Stop})
	// Between readiness withdrawn and the listeners' stop, while everything still serves: the
	// balancer's health check sees /readyz fail, then the clients are told to reconnect in
	// small random batches (docs/NODES.md "Rolling restarts").
	lc.Append(fx.StopHook(func(ctx context.Context) { drain.Clients(ctx, c.Config.Drain(), c.Log, c.TCP, c.WebSocket) }))
	lc.Append(fx.Hook{OnStart: c.HTTP.MarkReady, OnStop: c.HTTP.WithdrawReady})
	// 8. The metrics-only listener, when http.metrics_addr is set.
	if addr := c.Config.HTTP.MetricsAddr; addr != "" {
		m := httpapi.NewMetricsOnly(addr, c.Ports.MetricsHandler, c.Log)
		lc.Append(fx.Hook{OnStart: m.Start, OnStop: m.Stop})
	}
	// 9. The refresh that adds the tenants other nodes provision.
	refresh := background.New(func(ctx context.Context) { c.Registry.Run(ctx, c.Config.Registry.RefreshInterval) })
	lc.Append(fx.Hook{OnStart: refresh.Start, OnStop: refresh.Stop})
	// 10. Last: logged once everything runs, and first at stop.
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			c.Log.Info("imd ready", "tcp", c.Config.TCP.Addr, "http", c.Config.HTTP.Addr, "tenants", c.Config.TenantNames())
			return nil
		},
		OnStop: func(context.Context) error { c.Log.Info("shutting down"); return nil },
	})
}
