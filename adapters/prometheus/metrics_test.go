package prometheus

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRecordedValuesAreScraped(t *testing.T) {
	m := New(nil)
	m.Inc("group_message_persist_total", "202611", "ok")
	m.Inc("group_message_persist_total", "202611", "ok")
	m.Inc("group_message_route_rebuild_total", "failed")
	m.Inc("tcp_frames_in_total")
	m.Observe("group_message_query_latency", 0.003, "redis")
	m.Observe("group_message_query_tables", 2)
	m.Set("tcp_connections", 17)
	m.Set("deliver_queue_depth", 3, "default", "7")

	body := scrape(t, m)
	for _, want := range []string{
		`group_message_persist_total{month="202611",status="ok"} 2`,
		`group_message_route_rebuild_total{status="failed"} 1`,
		`tcp_frames_in_total 1`,
		`group_message_query_latency_bucket{source="redis",le="0.005"} 1`,
		`group_message_query_latency_count{source="redis"} 1`,
		`group_message_query_tables_bucket{le="2"} 1`,
		`group_message_query_tables_sum 2`,
		`tcp_connections 17`,
		`deliver_queue_depth{partition="7",tenant="default"} 3`,
		`# TYPE group_message_persist_total counter`,
		`# TYPE group_message_query_latency histogram`,
		`# TYPE tcp_connections gauge`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

func TestEveryUnlabeledMetricIsScrapedBeforeUse(t *testing.T) {
	body := scrape(t, New(nil))
	for _, s := range catalog() {
		if len(s.labels) > 0 {
			continue
		}
		name := s.name
		if s.kind == histogram {
			name += "_count"
		}
		if !strings.Contains(body, "\n"+name+" 0\n") {
			t.Errorf("scrape lacks %s 0", name)
		}
	}
}

func TestCatalogNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range catalog() {
		if seen[s.name] {
			t.Errorf("%s declared twice", s.name)
		}
		seen[s.name] = true
		if s.help == "" {
			t.Errorf("%s has no help", s.name)
		}
	}
}

func TestMisuseIsIgnoredAndLoggedOnce(t *testing.T) {
	tests := []struct {
		name string
		call func(m *Metrics)
	}{
		{"unknown counter", func(m *Metrics) { m.Inc("no_such_total") }},
		{"unknown histogram", func(m *Metrics) { m.Observe("no_such_seconds", 1) }},
		{"unknown gauge", func(m *Metrics) { m.Set("no_such_depth", 1) }},
		{"counter with too few labels", func(m *Metrics) { m.Inc("group_message_persist_total", "202611") }},
		{"counter with labels it lacks", func(m *Metrics) { m.Inc("tcp_frames_in_total", "x") }},
		{"histogram without its label", func(m *Metrics) { m.Observe("group_message_query_latency", 1) }},
		{"gauge with a label", func(m *Metrics) { m.Set("tcp_connections", 1, "x") }},
		{"Inc on a gauge", func(m *Metrics) { m.Inc("tcp_connections") }},
		{"Set on a counter", func(m *Metrics) { m.Set("tcp_frames_in_total", 5) }},
		{"Observe on a gauge", func(m *Metrics) { m.Observe("tcp_connections", 5) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			m := New(slog.New(slog.NewTextHandler(&logs, nil)))
			before := scrape(t, m)
			for range 3 {
				tt.call(m)
			}
			if n := strings.Count(logs.String(), "metric call ignored"); n != 1 {
				t.Errorf("logged %d warnings, want 1:\n%s", n, logs.String())
			}
			if after := scrape(t, m); productLines(after) != productLines(before) {
				t.Errorf("a misused call changed the product metrics:\n%s", productLines(after))
			}
		})
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape status %d", rec.Code)
	}
	body, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// productLines keeps the catalog series, dropping runtime metrics that move on their own.
func productLines(body string) string {
	names := map[string]bool{}
	for _, s := range catalog() {
		names[s.name] = true
	}
	var out []string
	for line := range strings.Lines(body) {
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			name = strings.TrimSuffix(name, suffix)
		}
		if names[name] {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
