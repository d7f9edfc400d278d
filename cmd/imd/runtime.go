package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/core/dailystats"
	"github.com/imdhq/imd/core/deliver"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/longsearch"
	"github.com/imdhq/imd/core/migration"
	"github.com/imdhq/imd/core/retention"
	"github.com/imdhq/imd/core/routerepair"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/seqholes"
	"github.com/imdhq/imd/core/shardmanager"
	"github.com/imdhq/imd/core/tenantregistry"
	"github.com/imdhq/imd/ports"
)

const (
	// dailyStatsFlush is how often the daily summary receives the counts summed since the
	// last flush: what a crash may lose, and how far the summary trails.
	dailyStatsFlush = 5 * time.Second
	// depthSampleEvery is how often the deliver queue's backlog is measured: a few times per
	// scrape interval, three Redis reads per partition each time.
	depthSampleEvery = 5 * time.Second
)

// Runtime runs every background loop through core/runtime: it is invoked before the
// transports, so the loops start before the listeners and stop after them (seed 003 §18):
// every committed message reaches the index feed and the deliver consumers, every push the
// TCP listener gives up becomes a mailbox row, no send is counted after the last stats flush.
func Runtime() fx.Option {
	return fx.Options(
		fx.Provide(newRuntime, newSeqHoleSweeper),
		fx.Invoke(loadTenants, func(lc fx.Lifecycle, rt *runtime.Runtime) {
			lc.Append(fx.Hook{OnStart: rt.Start, OnStop: rt.Stop})
		}),
	)
}

type runtimeParams struct {
	fx.In
	Cfg       config.Config
	Storage   tenantStorage
	Manager   *shardmanager.Manager
	Repair    *routerepair.Service
	Deliver   deliverParams
	Migration *migration.Service
	Retention *retention.Service
	Indexer   *longsearch.Indexer
	Stats     *dailystats.Counter
	Missed    *deliver.Missed
	SeqHoles  *seqholes.Sweeper
	Queue     ports.DeliverQueue
	Metrics   ports.Metrics
	Clock     ports.Clock
	Log       *slog.Logger
}

func newRuntime(p runtimeParams) (*runtime.Runtime, error) {
	depth, ok := p.Queue.(ports.DeliverDepth)
	if !ok {
		return nil, errors.New("metrics: the deliver queue cannot report its depth")
	}
	gauges := deliver.DepthGauges{Depth: depth, Metrics: p.Metrics, Clock: p.Clock, Log: p.Log}
	shardEvery := p.Cfg.Shard.CheckInterval
	node := []runtime.NodeLoop{
		// A job a killed process left copying is picked up again here.
		{Name: "migration", Run: func(ctx context.Context, ts func() []string) error { p.Migration.Run(ctx, ts); return nil }},
		{Name: "search_index", Run: func(ctx context.Context, _ func() []string) error {
			p.Indexer.Start()
			<-ctx.Done()
			p.Indexer.Stop() // writes what is queued
			return nil
		}},
		{Name: "stats_flush", Run: func(ctx context.Context, _ func() []string) error {
			p.Stats.Run(ctx, dailyStatsFlush)
			return p.Stats.Flush(context.WithoutCancel(ctx))
		}},
		{Name: "missed_pushes", Run: func(ctx context.Context, _ func() []string) error { p.Missed.Run(ctx); return nil }},
		{Name: "deliver_depth", Run: func(ctx context.Context, ts func() []string) error {
			gauges.Run(ctx, ts, depthSampleEvery)
			return nil
		}},
		// DESIGN §4: a seq a failed send left unused ends as a tombstone. Every node sweeps: two
		// closing the same seq is harmless, the second finds it taken.
		{Name: "seq_holes", Run: func(ctx context.Context, ts func() []string) error {
			p.SeqHoles.RunEvery(ctx, ts, p.Cfg.Shard.SeqHoleSweepInterval)
			return nil
		}},
	}
	if every := p.Cfg.Archive.RetentionInterval; every > 0 {
		node = append(node, runtime.NodeLoop{Name: "retention", Run: func(ctx context.Context, ts func() []string) error {
			p.Retention.RunEvery(ctx, ts, every)
			return nil
		}})
	}
	one := func(t string) []string { return []string{t} }
	perTenant := []runtime.TenantLoop{
		{Name: "shard_manager", Run: func(ctx context.Context, t string) error { p.Manager.Run(ctx, one(t), shardEvery); return nil }},
		// Route repairs, the tenant-wide rebuild when Redis lost the routes, reconciliation.
		{Name: "route_repair", Run: func(ctx context.Context, t string) error { p.Repair.Run(ctx, one(t)); return nil }},
		{Name: "deliver", Run: func(ctx context.Context, t string) error {
			pool := newDeliver(p.Deliver)
			if err := pool.Start(ctx, one(t)); err != nil {
				return fmt.Errorf("deliver workers: %w", err)
			}
			<-ctx.Done()
			return pool.Stop(context.WithoutCancel(ctx)) // each worker finishes its job
		}},
	}
	prepare := func(ctx context.Context, t tenant.Info) error {
		if err := p.Storage(ctx, t); err != nil {
			return err
		}
		if err := p.Manager.Ensure(ctx, t.Name); err != nil {
			return fmt.Errorf("month tables of %s: %w", t.Name, err)
		}
		p.Log.InfoContext(ctx, "tenant ready", "tenant", t.Name, "database", t.Database)
		return nil
	}
	return runtime.New(runtime.Config{}, runtime.Deps{
		Prepare: prepare, Tenant: perTenant, Node: node, Metrics: p.Metrics, Log: p.Log,
	}), nil
}

// loadTenants readies every tenant the registry knows, configured and provisioned, before the
// runtime starts their loops.
func loadTenants(lc fx.Lifecycle, reg *tenantregistry.Registry, rt *runtime.Runtime) {
	lc.Append(fx.StartHook(func(ctx context.Context) error {
		if err := reg.Load(ctx); err != nil {
			return err
		}
		for _, t := range reg.List() {
			if err := rt.Add(ctx, t); err != nil {
				return err
			}
		}
		return nil
	}))
}

// refreshTenants runs the registry's refresh, so tenants other nodes provision are served
// here too (it adds them to the runtime). Invoked after the transports: it starts last and
// stops first.
func refreshTenants(lc fx.Lifecycle, cfg config.Config, reg *tenantregistry.Registry) {
	refresh := runtime.NewBackground(func(ctx context.Context) { reg.Run(ctx, cfg.Registry.RefreshInterval) })
	lc.Append(fx.Hook{OnStart: refresh.Start, OnStop: refresh.Stop})
}
