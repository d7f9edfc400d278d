package main

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/prometheus"
)

// Observe runs the metrics-only listener when http.metrics_addr is set.
func Observe() fx.Option {
	return fx.Invoke(runMetricsListener)
}

func runMetricsListener(lc fx.Lifecycle, cfg config.Config, m *prometheus.Metrics, log *slog.Logger) {
	if cfg.HTTP.MetricsAddr == "" {
		return
	}
	l := httpapi.NewMetricsOnly(cfg.HTTP.MetricsAddr, m.Handler(), log)
	lc.Append(fx.Hook{OnStart: l.Start, OnStop: l.Stop})
}
