package main

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
)

// Observe runs the metrics-only listener when http.metrics_addr is set.
func Observe() fx.Option {
	return fx.Invoke(runMetricsListener)
}

func runMetricsListener(lc fx.Lifecycle, cfg config.Config, m metricsHandler, log *slog.Logger) {
	if cfg.HTTP.MetricsAddr == "" {
		return
	}
	l := httpapi.NewMetricsOnly(cfg.HTTP.MetricsAddr, m, log)
	lc.Append(fx.Hook{OnStart: l.Start, OnStop: l.Stop})
}
