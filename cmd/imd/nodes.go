package main

import (
	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/core/cluster"
	"github.com/imdhq/imd/core/deliver"
	"github.com/imdhq/imd/core/tenantregistry"
	"github.com/imdhq/imd/ports"
)

// Nodes wires several nodes on one tenant (DESIGN §11): this node's instance name, the lease
// keeper (node lease, dead-node retirement, deliver partitions), the presence tracker the
// session registry reports to, the cross-node pusher the deliver side pushes through, and the
// receiver of this node's push channel. Invoked before the runtime and the transports, its
// loops start before the deliver workers and the listener and stop after them.
func Nodes() fx.Option {
	return fx.Options(
		fx.Provide(
			config.Config.Nodes,
			cluster.NewNodeView,
			cluster.NewForwarder,
			as(cluster.NewTracker, fx.Self(), new(session.Observer)),
			queueView[ports.DeliverLeases],
			as(inject(cluster.NewKeeper), fx.Self(), new(deliver.Owner)),
			inject(cluster.NewPusher),
			// A push that fails here is acted on as the deliver workers act on their own.
			as(deliver.NewFallback, new(cluster.Fallback)),
			inject(cluster.NewReceiver),
			cluster.NewLoops,
			func() *cluster.LateTenants { return &cluster.LateTenants{} },
			func(l *cluster.LateTenants) cluster.Tenants { return l.Names },
		),
		fx.Invoke(func(lc fx.Lifecycle, names *cluster.LateTenants, reg *tenantregistry.Registry, l *cluster.Loops) {
			names.Bind(reg.Names)
			lc.Append(fx.Hook{OnStart: l.Start, OnStop: l.Stop})
		}),
	)
}
