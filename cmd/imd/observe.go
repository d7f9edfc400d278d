package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/prometheus"
	"github.com/imdhq/imd/core/deliver"
	"github.com/imdhq/imd/core/tenants"
	"github.com/imdhq/imd/ports"
)

// depthSampleEvery is how often the deliver queue's backlog is measured: a few times per
// scrape interval, three Redis reads per partition each time.
const depthSampleEvery = 5 * time.Second

// Observe runs what only serves the metrics: the deliver queue depth gauges and, when
// http.metrics_addr is set, the metrics-only listener.
func Observe() fx.Option {
	return fx.Invoke(runDepthGauges, runMetricsListener)
}

func runMetricsListener(lc fx.Lifecycle, cfg config.Config, m *prometheus.Metrics, log *slog.Logger) {
	if cfg.HTTP.MetricsAddr == "" {
		return
	}
	l := httpapi.NewMetricsOnly(cfg.HTTP.MetricsAddr, m.Handler(), log)
	lc.Append(fx.Hook{OnStart: l.Start, OnStop: l.Stop})
}

type depthParams struct {
	fx.In
	LC      fx.Lifecycle
	Queue   ports.DeliverQueue
	Tenants *tenants.Registry
	Metrics ports.Metrics
	Clock   ports.Clock
	Log     *slog.Logger
}

func runDepthGauges(p depthParams) error {
	depth, ok := p.Queue.(ports.DeliverDepth)
	if !ok {
		return errors.New("metrics: the deliver queue cannot report its depth")
	}
	g := deliver.DepthGauges{Depth: depth, Metrics: p.Metrics, Clock: p.Clock, Log: p.Log}
	var stop context.CancelFunc
	done := make(chan struct{})
	p.LC.Append(fx.Hook{
		OnStart: func(context.Context) error {
			var ctx context.Context
			ctx, stop = context.WithCancel(context.Background())
			go func() {
				defer close(done)
				g.Run(ctx, p.Tenants.Names, depthSampleEvery)
			}()
			return nil
		},
		OnStop: func(context.Context) error {
			stop()
			<-done
			return nil
		},
	})
	return nil
}
