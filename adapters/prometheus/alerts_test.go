package prometheus

import (
	"os"
	"os/exec"
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

// TestAlertRulesPassPromtool runs Prometheus's own checker on the rules and its unit tests,
// one file per alert under deploy/prometheus/tests (each: quiet before the condition has held
// for its `for`, firing with the expected labels and annotations after).
func TestAlertRulesPassPromtool(t *testing.T) {
	promtool := requirePromtool(t)
	rules := readAlertRules(t)
	var tests []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			file := filepath.Join(prometheusDir, "tests", r.Alert+".yaml")
			if _, err := os.Stat(file); err != nil {
				t.Errorf("alert %s has no unit test: %v", r.Alert, err)
			}
			tests = append(tests, file)
		}
	}
	files, err := filepath.Glob(filepath.Join(prometheusDir, "tests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !slices.Contains(tests, f) {
			t.Errorf("%s tests no alert of alerts.yaml", f)
		}
	}
	runPromtool(t, promtool, "check", "rules", filepath.Join(prometheusDir, "alerts.yaml"))
	runPromtool(t, promtool, append([]string{"test", "rules"}, tests...)...)
}

// requirePromtool finds promtool (deploy/local/services.sh installs Debian's prometheus
// package for it); without it the test fails under `go tool task test` and skips elsewhere.
func requirePromtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("promtool not found: run `bash deploy/local/services.sh up` (installs the prometheus package)")
		}
		t.Skip("promtool not installed; run `go tool task test`")
	}
	return path
}

func runPromtool(t *testing.T, promtool string, args ...string) {
	t.Helper()
	out, err := exec.Command(promtool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args[:2], " "), err, out)
	}
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

// prometheusDir holds the Prometheus config, the alert rules and their unit tests.
var prometheusDir = filepath.Join("..", "..", "deploy", "prometheus")

func readAlertRules(t *testing.T) alertRules {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(prometheusDir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	if err := yaml.UnmarshalWithOptions(raw, &rules, yaml.Strict()); err != nil {
		t.Fatalf("parse alerts.yaml: %v", err)
	}
	return rules
}

// scrapeMetrics are the series Prometheus adds to every target itself.
var scrapeMetrics = []string{"up"}

// knownMetric reports whether name is a series imd's registry exposes (a histogram's
// _bucket/_count/_sum included): a catalog metric, one of the collectors' (Go runtime,
// process, build info), one Prometheus adds to every scrape.
func knownMetric(name string) bool {
	if slices.Contains(scrapeMetrics, name) {
		return true
	}
	fams, err := New(nil).reg.Gather()
	if err != nil {
		return false
	}
	for _, f := range fams {
		if f.GetName() == name {
			return true
		}
	}
	declared := map[string]kind{}
	for _, s := range catalog() {
		declared[s.name] = s.kind
	}
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

// TestAlertRulesUseCatalogMetrics parses deploy/prometheus/alerts.yaml and checks each rule
// is complete and reads only declared metrics, so a renamed metric cannot leave an alert
// silently watching nothing.
func TestAlertRulesUseCatalogMetrics(t *testing.T) {
	rules := readAlertRules(t)
	known := knownMetric
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
	// The alert conditions of seed 000 §11 and of issue 20, each watched through its metric.
	for _, want := range []string{
		"group_message_shard_ready", "group_message_shard_missing_total", "group_message_persist_total",
		"group_message_persist_latency_bucket", "group_message_query_tables_bucket", "group_message_route_miss_total",
		"group_message_route_repair_backlog", "group_message_dead_letter_total",
		"up", "deliver_queue_depth", "deliver_queue_lag_seconds", "deliver_dead_letters", "taskpool_rejected_total",
		"outbound_drop_total", "realip_missing_total", "cross_node_push_lag_seconds_bucket",
	} {
		if !used[want] {
			t.Errorf("no alert reads %s", want)
		}
	}
}

// TestEveryAlertHasARunbookLine reads the table of README "Alerts: what to do when one fires"
// and checks each alert of alerts.yaml has a line saying what to do, and no line names an alert
// that does not exist.
func TestEveryAlertHasARunbookLine(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(raw), "\n### Alerts: what to do when one fires\n")
	if !found {
		t.Fatal(`README has no section "### Alerts: what to do when one fires"`)
	}
	section, _, _ = strings.Cut(section, "\n#")
	runbook := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 4 || strings.TrimSpace(cells[0]) != "" || strings.TrimSpace(cells[3]) != "" {
			continue // not a two-column table row
		}
		runbook[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[2])
	}
	alerts := map[string]bool{}
	for _, g := range readAlertRules(t).Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = true
			if len(runbook[r.Alert]) < 20 {
				t.Errorf("alert %s has no runbook line in README (got %q)", r.Alert, runbook[r.Alert])
			}
		}
	}
	for name := range runbook {
		if name != "alert" && !strings.HasPrefix(name, "---") && !alerts[name] {
			t.Errorf("README's runbook names %s, which alerts.yaml does not define", name)
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

var (
	selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
)

// selector is one series selector of an alert expression: a metric and its label matchers.
type selector struct {
	name     string
	matchers [][]string // label, operator, value
}

// selectorsOf lists the selectors of an expression: those with matchers, and every metric
// read bare.
func selectorsOf(expr string) []selector {
	var out []selector
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		s := selector{name: m[1]}
		for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			s.matchers = append(s.matchers, mm[1:])
		}
		out = append(out, s)
	}
	for _, name := range metricsOf(expr) {
		out = append(out, selector{name: name})
	}
	return out
}

// matches reports whether a series' labels satisfy every matcher.
func (s selector) matches(labels map[string]string) bool {
	for _, m := range s.matchers {
		v := labels[m[0]]
		re := regexp.MustCompile("^(?:" + m[2] + ")$")
		ok := map[string]bool{"=": v == m[2], "!=": v != m[2], "=~": re.MatchString(v), "!~": !re.MatchString(v)}[m[1]]
		if !ok {
			return false
		}
	}
	return true
}

// TestSeriesAlertsWatchAreScrapedBeforeUse: every series an alert rule names is in a fresh
// scrape, at 0, before its first event: rate() and increase() see nothing of a series until
// its second sample, so one born at its first failure would keep the alert quiet. A series is
// named when the selector constrains every label of its metric; series of a tenant, month or
// route cannot exist before their first use.
func TestSeriesAlertsWatchAreScrapedBeforeUse(t *testing.T) {
	specs := map[string]spec{}
	for _, s := range catalog() {
		specs[s.name] = s
	}
	fams, err := New(nil).reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string][]map[string]string{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			series[f.GetName()] = append(series[f.GetName()], labels)
		}
	}
	checked := 0
	for _, g := range readAlertRules(t).Groups {
		for _, r := range g.Rules {
			for _, sel := range selectorsOf(r.Expr) {
				name := sel.name
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if base, ok := strings.CutSuffix(name, suffix); ok && specs[base].kind == histogram {
						name = base // its series are the family's, without le
						sel.matchers = slices.DeleteFunc(sel.matchers, func(m []string) bool { return m[0] == "le" })
					}
				}
				s, ok := specs[name]
				if !ok {
					continue // not the product's: up, the collectors'
				}
				constrained := 0
				for _, l := range s.labels {
					if slices.ContainsFunc(sel.matchers, func(m []string) bool { return m[0] == l }) {
						constrained++
					}
				}
				if constrained < len(s.labels) {
					continue
				}
				checked++
				if !slices.ContainsFunc(series[name], sel.matches) {
					t.Errorf("%s: %s%v is not in a fresh scrape; declare its values in the catalog", r.Alert, sel.name, sel.matchers)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no selector checked")
	}
}
