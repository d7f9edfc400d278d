package main

import (
	"context"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/core/deliver"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/seqholes"
	"github.com/imdhq/imd/core/tenantregistry"
	"github.com/imdhq/imd/ports"
)

// Runtime runs every background loop through core/runtime: it is invoked before the
// transports, so the loops start before the listeners and stop after them (seed 003 §18):
// every committed message reaches the index feed and the deliver consumers, every push the
// TCP listener gives up becomes a mailbox row, no send is counted after the last stats flush.
func Runtime() fx.Option {
	return fx.Options(
		fx.Provide(
			config.Config.NodeLoops, config.Config.SeqHoleSweep, config.Config.DeliverWorkers,
			inject(seqholes.New),
			// Each tenant's deliver workers are built from these when its loop starts.
			gather[deliver.Deps](),
			queueView[ports.DeliverDepth],
			inject(runtime.NewNode),
		),
		fx.Invoke(func(lc fx.Lifecycle, reg *tenantregistry.Registry, rt *runtime.Runtime) {
			// Every tenant the registry knows is readied before the runtime starts the loops.
			lc.Append(fx.StartHook(reg.Boot))
			lc.Append(fx.Hook{OnStart: rt.Start, OnStop: rt.Stop})
		}),
	)
}

// refreshTenants runs the registry's refresh, so tenants other nodes provision are served
// here too (it adds them to the runtime). Invoked after the transports: it starts last and
// stops first.
func refreshTenants(lc fx.Lifecycle, cfg config.Config, reg *tenantregistry.Registry) {
	refresh := runtime.NewBackground(func(ctx context.Context) { reg.Run(ctx, cfg.Registry.RefreshInterval) })
	lc.Append(fx.Hook{OnStart: refresh.Start, OnStop: refresh.Stop})
}
