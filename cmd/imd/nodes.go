package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/adapters/protocol/session"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/core/cluster"
	"github.com/imdhq/imd/core/deliver"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/tenantregistry"
	"github.com/imdhq/imd/ports"
)

// Nodes wires several nodes on one tenant (DESIGN §11, issue 14): this node's instance name,
// the lease keeper (node lease, dead-node retirement, deliver partitions), the presence
// tracker the session registry reports to, the cross-node pusher the deliver side pushes
// through, and the receiver of this node's push channel. Its per-node loops start before the
// deliver workers and the listener and stop after them (runNodes is invoked first).
func Nodes() fx.Option {
	return fx.Options(
		fx.Provide(
			newNodeView,
			config.Config.Nodes,
			cluster.NewForwarder,
			// The session registry reports to it which devices this node holds.
			as(cluster.NewTracker, fx.Self(), new(session.Observer)),
			queueView[ports.DeliverLeases],
			newKeeper,
			func(k *cluster.Keeper) deliver.Owner { return k },
			newClusterPusher,
			newReceiver,
			func() *cluster.LateTenants { return &cluster.LateTenants{} },
		),
		fx.Invoke(runNodes),
	)
}

func newNodeView(cfg config.Config, log *slog.Logger) (*cluster.View, error) {
	name, err := cluster.InstanceName(cfg.NodeID)
	if err != nil {
		return nil, err
	}
	log.Info("node instance", "node", name)
	return cluster.NewView(name), nil
}

func newKeeper(cfg cluster.Config, v *cluster.View, n ports.NodeLeases, q ports.DeliverQueue, leases ports.DeliverLeases, reg *cluster.LateTenants, log *slog.Logger) *cluster.Keeper {
	return cluster.NewKeeper(cfg, cluster.KeeperDeps{View: v, Nodes: n, Leases: leases, Tenants: reg.Names, Partitions: q.Partitions(), Log: log})
}

// newClusterPusher decorates the listener's sessions; the deliver side is bound to it (app.go).
func newClusterPusher(cfg cluster.Config, v *cluster.View, presence ports.Presence, channel ports.NodeChannel, tcp *tcpserver.Server, c ports.Clock, m ports.Metrics, log *slog.Logger) *cluster.Pusher {
	return cluster.NewPusher(cfg, cluster.PusherDeps{Local: tcp, View: v, Presence: presence, Channel: channel, Clock: c, Metrics: m, Log: log})
}

// newReceiver acts for a push that fails here as the deliver workers do for their own
// (deliver.Fallback, built from the workers' config and ports).
func newReceiver(v *cluster.View, n ports.NodeChannel, tcp *tcpserver.Server, t *cluster.Tracker, wc deliver.Config, wd deliver.Deps,
	reg *cluster.LateTenants, c ports.Clock, m ports.Metrics, log *slog.Logger) *cluster.Receiver {
	return cluster.NewReceiver(cluster.ReceiverDeps{
		View: v, Channel: n, Local: tcp, Kicker: tcp, Tracker: t, Fallback: deliver.NewFallback(wc, wd), Tenants: reg.Names, Clock: c, Metrics: m, Log: log,
	})
}

// runNodes starts the keeper (one pass, so this node is known and holds its partitions before
// the deliver workers start), the presence removals and the receiver; they stop last, once the
// listener has closed every connection and the workers have finished.
func runNodes(lc fx.Lifecycle, names *cluster.LateTenants, reg *tenantregistry.Registry, k *cluster.Keeper, t *cluster.Tracker, r *cluster.Receiver) {
	names.Bind(reg.Names)
	removals := runtime.NewBackground(t.Run)
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := k.Start(ctx); err != nil {
				return fmt.Errorf("node lease: %w", err)
			}
			if err := removals.Start(ctx); err != nil {
				return err
			}
			r.Start(ctx)
			return nil
		},
		OnStop: func(ctx context.Context) error {
			r.Stop()
			return errors.Join(removals.Stop(ctx), k.Stop(ctx))
		},
	})
}
