package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/loop/dailystats"
	"github.com/imdhq/imd/core/loop/deliver"
	"github.com/imdhq/imd/core/loop/listrepair"
	"github.com/imdhq/imd/core/loop/migration"
	"github.com/imdhq/imd/core/loop/retention"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/loop/seqholes"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/loop/webhooks"
	"github.com/imdhq/imd/core/usecase/longsearch"
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

// ReadyStorage readies a tenant's database before its loops start: schema migrations, and a
// clock behind its newest msg_id refused (DESIGN §1).
type ReadyStorage func(ctx context.Context, t tenant.Info) error

// NodeConfig is how often the periodic loops run; a zero Retention runs no retention.
type NodeConfig struct {
	ShardCheck   time.Duration
	SeqHoleSweep time.Duration
	Retention    time.Duration
	Webhooks     time.Duration
}

// NodeDeps are the use cases whose loops a node runs.
type NodeDeps struct {
	Storage   ReadyStorage
	Manager   *shardmanager.Manager
	Repair    *routerepair.Service
	Deliver   deliver.Deps
	Workers   deliver.Config
	Migration *migration.Service
	Retention *retention.Service
	Indexer   *longsearch.Indexer
	Stats     *dailystats.Counter
	Missed    *deliver.Missed
	SeqHoles  *seqholes.Sweeper
	Webhooks  *webhooks.Loop
	Lists     *listrepair.Service
	Depth     ports.DeliverDepth
	Metrics   ports.Metrics
	Clock     ports.Clock
	Log       *slog.Logger
}

// NewNode is the runtime of one imd process: every loop of its tenants and over them, each
// tenant prepared (database, month tables) before its loops start.
func NewNode(cfg NodeConfig, d NodeDeps) *Runtime {
	return New(Config{}, Deps{Prepare: d.prepare, Tenant: d.tenantLoops(cfg), Node: d.nodeLoops(cfg), Metrics: d.Metrics, Log: d.Log})
}

func (d NodeDeps) prepare(ctx context.Context, t tenant.Info) error {
	if err := d.Storage(ctx, t); err != nil {
		return err
	}
	if err := d.Manager.Ensure(ctx, t.Name); err != nil {
		return fmt.Errorf("month tables of %s: %w", t.Name, err)
	}
	d.Log.InfoContext(ctx, "tenant ready", "tenant", t.Name, "database", t.Database)
	return nil
}

func (d NodeDeps) nodeLoops(cfg NodeConfig) []NodeLoop {
	gauges := deliver.DepthGauges{Depth: d.Depth, Metrics: d.Metrics, Clock: d.Clock, Log: d.Log}
	loops := []NodeLoop{
		// A job a killed process left copying is picked up again here.
		{Name: "migration", Run: func(ctx context.Context, ts func() []string) error { d.Migration.Run(ctx, ts); return nil }},
		{Name: "search_index", Run: func(ctx context.Context, _ func() []string) error {
			d.Indexer.Start()
			<-ctx.Done()
			d.Indexer.Stop() // writes what is queued
			return nil
		}},
		{Name: "stats_flush", Run: func(ctx context.Context, _ func() []string) error {
			d.Stats.Run(ctx, dailyStatsFlush)
			return d.Stats.Flush(context.WithoutCancel(ctx))
		}},
		{Name: "missed_pushes", Run: func(ctx context.Context, _ func() []string) error { d.Missed.Run(ctx); return nil }},
		{Name: "deliver_depth", Run: func(ctx context.Context, ts func() []string) error {
			gauges.Run(ctx, ts, depthSampleEvery)
			return nil
		}},
		// DESIGN §4: a seq a failed send left unused ends as a tombstone. Every node sweeps: two
		// closing the same seq is harmless, the second finds it taken.
		{Name: "seq_holes", Run: func(ctx context.Context, ts func() []string) error {
			d.SeqHoles.RunEvery(ctx, ts, cfg.SeqHoleSweep)
			return nil
		}},
	}
	// Issue 32: every node runs the passes; the tenant's lease leaves the delivery to one.
	loops = append(loops, NodeLoop{Name: "webhooks", Run: func(ctx context.Context, ts func() []string) error {
		d.Webhooks.RunEvery(ctx, ts, cfg.Webhooks)
		return nil
	}})
	// Seed 003 §20 item 13: what a lost deliver job never did to the lists is re-applied. Every
	// node repairs: two re-applying one message act once, under the job's marker.
	loops = append(loops, NodeLoop{Name: "list_repair", Run: func(ctx context.Context, ts func() []string) error {
		d.Lists.RunEvery(ctx, ts)
		return nil
	}})
	if every := cfg.Retention; every > 0 {
		loops = append(loops, NodeLoop{Name: "retention", Run: func(ctx context.Context, ts func() []string) error {
			d.Retention.RunEvery(ctx, ts, every)
			return nil
		}})
	}
	return loops
}

func (d NodeDeps) tenantLoops(cfg NodeConfig) []TenantLoop {
	one := func(t string) []string { return []string{t} }
	return []TenantLoop{
		{Name: "shard_manager", Run: func(ctx context.Context, t string) error { d.Manager.Run(ctx, one(t), cfg.ShardCheck); return nil }},
		// Route repairs, the tenant-wide rebuild when Redis lost the routes, reconciliation.
		{Name: "route_repair", Run: func(ctx context.Context, t string) error { d.Repair.Run(ctx, one(t)); return nil }},
		{Name: "deliver", Run: func(ctx context.Context, t string) error {
			pool := deliver.New(d.Workers, d.Deliver)
			if err := pool.Start(ctx, one(t)); err != nil {
				return fmt.Errorf("deliver workers: %w", err)
			}
			<-ctx.Done()
			return pool.Stop(context.WithoutCancel(ctx)) // each worker finishes its job
		}},
	}
}
