package prometheus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestDashboardQueriesRealMetrics reads the provisioned Grafana dashboard and checks every
// query reads only series imd exposes, so no graph silently shows "No data" after a rename.
func TestDashboardQueriesRealMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "dashboards", "imd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("parse imd.json: %v", err)
	}
	titles := map[string]bool{}
	for _, p := range dash.Panels {
		titles[p.Title] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			names := metricsOf(target.Expr)
			if len(names) == 0 {
				t.Errorf("panel %q: %q reads no metric", p.Title, target.Expr)
			}
			for _, name := range names {
				if !knownMetric(name) {
					t.Errorf("panel %q: %q is not a metric imd exposes", p.Title, name)
				}
			}
		}
	}
	// What issue 20 asks the dashboard to show.
	for _, want := range []string{
		"Connections", "Sends/s by code", "SEND_ACK latency", "Persist latency", "Deliver lag per partition",
		"Task pool", "Outbound drops and push timeouts", "Month tables ready", "Route repair", "Migration progress",
		"Cross-node forwards/s by result", "Cross-node push lag",
	} {
		if !titles[want] {
			t.Errorf("dashboard has no panel %q", want)
		}
	}
}

// TestPrometheusConfigPassesPromtool checks the compose stack's Prometheus config (and the
// rule file it loads) with Prometheus's own checker.
func TestPrometheusConfigPassesPromtool(t *testing.T) {
	runPromtool(t, requirePromtool(t), "check", "config", filepath.Join(prometheusDir, "prometheus.yml"))
}
