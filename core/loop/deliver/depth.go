package deliver

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/imdhq/imd/ports"
)

// DepthGauges samples the deliver queue's backlog into the metrics: jobs waiting and taken per
// partition (seed 003 §17), how long the head of each partition has waited, and the dead
// letters. A queue that grows, or a head that ages, is delivery falling behind.
type DepthGauges struct {
	Depth   ports.DeliverDepth
	Metrics ports.Metrics
	Clock   ports.Clock
	Log     *slog.Logger
}

// Run samples every tenant at once and then every interval, until ctx ends. tenants is asked
// at every sample, so a tenant provisioned at run time is sampled from the next one on.
func (g DepthGauges) Run(ctx context.Context, tenants func() []string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for _, tenant := range tenants() {
			g.Sample(ctx, tenant)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sample sets the gauges of one tenant. What could not be read is logged; what could is set,
// so a damaged list does not hide the backlog of the others.
func (g DepthGauges) Sample(ctx context.Context, tenant string) {
	d, err := g.Depth.Depth(ctx, tenant)
	if err != nil && ctx.Err() == nil {
		g.Log.WarnContext(ctx, "deliver queue depth partly unreadable", "tenant", tenant, "err", err)
	}
	now := g.Clock.Now().UnixMilli()
	for i, p := range d.Partitions {
		partition := strconv.Itoa(i)
		g.Metrics.Set("deliver_queue_depth", float64(p.Queued), tenant, partition)
		g.Metrics.Set("deliver_processing_depth", float64(p.Processing), tenant, partition)
		lag := 0.0
		if p.OldestQueuedAt > 0 && now > p.OldestQueuedAt {
			lag = float64(now-p.OldestQueuedAt) / 1000
		}
		g.Metrics.Set("deliver_queue_lag_seconds", lag, tenant, partition)
	}
	g.Metrics.Set("deliver_dead_letters", float64(d.Dead), tenant)
}
