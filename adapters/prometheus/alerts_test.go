package prometheus

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// alertRules is the part of a Prometheus rule file the test reads.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// promqlWords are the functions, aggregations and keywords the rules may use; every other
// identifier in an expression must be a metric of the catalog.
var promqlWords = []string{
	"sum", "min", "max", "avg", "count", "by", "without", "and", "or", "unless", "on", "ignoring",
	"rate", "irate", "increase", "delta", "deriv", "absent", "histogram_quantile", "bool", "offset",
}

var (
	quotedRE     = regexp.MustCompile(`"[^"]*"`)
	matchersRE   = regexp.MustCompile(`\{[^}]*\}`)
	rangeRE      = regexp.MustCompile(`\[[^\]]*\]`)
	groupingRE   = regexp.MustCompile(`\b(by|without|on|ignoring)\s*\([^)]*\)`)
	identifierRE = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// metricsOf lists the metric names an expression reads.
func metricsOf(expr string) []string {
	expr = quotedRE.ReplaceAllString(expr, "")
	expr = matchersRE.ReplaceAllString(expr, "")
	expr = rangeRE.ReplaceAllString(expr, "")
	expr = groupingRE.ReplaceAllString(expr, "")
	var out []string
	for _, id := range identifierRE.FindAllString(expr, -1) {
		if !slices.Contains(promqlWords, id) {
			out = append(out, id)
		}
	}
	return out
}

// TestAlertRulesUseCatalogMetrics parses deploy/prometheus/alerts.yaml (promtool is not
// available here) and checks each rule is complete and reads only declared metrics, so a
// renamed metric cannot leave an alert silently watching nothing.
func TestAlertRulesUseCatalogMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	if err := yaml.UnmarshalWithOptions(raw, &rules, yaml.Strict()); err != nil {
		t.Fatalf("parse alerts.yaml: %v", err)
	}
	declared := map[string]kind{}
	for _, s := range catalog() {
		declared[s.name] = s.kind
	}
	known := func(name string) bool {
		if _, ok := declared[name]; ok {
			return true
		}
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && declared[base] == histogram {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	used := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			switch {
			case r.Alert == "" || seen[r.Alert]:
				t.Errorf("group %s: missing or repeated alert name %q", g.Name, r.Alert)
			case strings.TrimSpace(r.Expr) == "":
				t.Errorf("%s: no expr", r.Alert)
			case r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical":
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, r.Labels["severity"])
			case r.Annotations["summary"] == "" || r.Annotations["description"] == "":
				t.Errorf("%s: summary and description are required", r.Alert)
			}
			seen[r.Alert] = true
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			names := metricsOf(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: expr %q reads no metric", r.Alert, r.Expr)
			}
			for _, name := range names {
				if !known(name) {
					t.Errorf("%s: %q is not a metric of the catalog", r.Alert, name)
				}
				used[name] = true
			}
		}
	}
	// The alert conditions of seed 000 §11, each watched through its metric.
	for _, want := range []string{
		"group_message_shard_ready", "group_message_shard_missing_total", "group_message_persist_total",
		"group_message_query_tables_bucket", "group_message_route_miss_total",
		"group_message_route_repair_backlog", "group_message_dead_letter_total",
	} {
		if !used[want] {
			t.Errorf("no alert reads %s", want)
		}
	}
}

func TestMetricsOf(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`min by (tenant) (a_ready{month="next"}) == 0`, []string{"a_ready"}},
		{`sum(rate(x_total{status=~"failed|x"}[5m])) / sum(rate(x_total[5m])) > 0.01`, []string{"x_total", "x_total"}},
		{`max by (tenant) (b) > 0 and max by (tenant) (deriv(b[15m])) > 0`, []string{"b", "b"}},
		{`absent(c{month="active"})`, []string{"c"}},
	}
	for _, tc := range tests {
		if got := metricsOf(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricsOf(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}
