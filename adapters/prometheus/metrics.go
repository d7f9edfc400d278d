// Package prometheus records the product metrics (ports.Metrics) in a private registry and
// serves them for scraping. Every name is declared up front in catalog, so a scrape always
// shows the full set and a typo cannot silently create a new series.
package prometheus

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is a ports.Metrics over its own registry.
type Metrics struct {
	reg        *prometheus.Registry
	counters   map[string]*prometheus.CounterVec
	histograms map[string]*prometheus.HistogramVec
	gauges     map[string]*prometheus.GaugeVec
	log        *slog.Logger
	warned     sync.Map // misuse key → struct{}: each misuse is logged once, not on every call
}

// New registers every catalog metric plus the Go runtime and process collectors and the
// build info. log (nil
// for none) receives one warning per misused metric name.
func New(log *slog.Logger) *Metrics {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{
		reg:        prometheus.NewRegistry(),
		counters:   make(map[string]*prometheus.CounterVec),
		histograms: make(map[string]*prometheus.HistogramVec),
		gauges:     make(map[string]*prometheus.GaugeVec),
		log:        log,
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(),
	)
	// A metric without labels has exactly one series, and a counter an alert watches declares
	// the values it watches: creating them now makes the scrape show 0 before the first event,
	// so rate() and alerts work from the start.
	for _, s := range catalog() {
		switch s.kind {
		case counter:
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: s.name, Help: s.help}, s.labels)
			m.reg.MustRegister(v)
			m.counters[s.name] = v
			if len(s.labels) == 0 {
				v.WithLabelValues()
			}
			for _, value := range s.values {
				v.WithLabelValues(value)
			}
		case histogram:
			v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: s.name, Help: s.help, Buckets: s.buckets}, s.labels)
			m.reg.MustRegister(v)
			m.histograms[s.name] = v
			if len(s.labels) == 0 {
				v.WithLabelValues()
			}
		case gauge:
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: s.name, Help: s.help}, s.labels)
			m.reg.MustRegister(v)
			m.gauges[s.name] = v
			if len(s.labels) == 0 {
				v.WithLabelValues()
			}
		}
	}
	return m
}

// Inc adds one to a counter.
func (m *Metrics) Inc(name string, labels ...string) {
	if c, ok := series[prometheus.Counter](m, "Inc", name, counter, m.counters, labels); ok {
		c.Inc()
	}
}

// Add adds value (≥ 0) to a counter.
func (m *Metrics) Add(name string, value float64, labels ...string) {
	if value < 0 {
		m.warnOnce("Add", name, fmt.Errorf("negative value %v", value)) // a counter never goes down
		return
	}
	if c, ok := series[prometheus.Counter](m, "Add", name, counter, m.counters, labels); ok {
		c.Add(value)
	}
}

// Observe records one histogram sample.
func (m *Metrics) Observe(name string, value float64, labels ...string) {
	if h, ok := series[prometheus.Observer](m, "Observe", name, histogram, m.histograms, labels); ok {
		h.Observe(value)
	}
}

// Set sets a gauge.
func (m *Metrics) Set(name string, value float64, labels ...string) {
	if g, ok := series[prometheus.Gauge](m, "Set", name, gauge, m.gauges, labels); ok {
		g.Set(value)
	}
}

// series is the series of the declared metric name with labels, of one of the vectors vecs;
// a misuse (an undeclared name, the wrong labels) is warned of once, as op, and gives none.
func series[S any, V interface {
	GetMetricWithLabelValues(...string) (S, error)
}](m *Metrics, op, name string, k kind, vecs map[string]V, labels []string) (S, bool) {
	var none S
	v, ok := vecs[name]
	if !ok {
		m.warnOnce(op, name, fmt.Errorf("not a declared %s", k))
		return none, false
	}
	s, err := v.GetMetricWithLabelValues(labels...)
	if err != nil {
		m.warnOnce(op, name, err)
		return none, false
	}
	return s, true
}

// Handler serves the registry in the Prometheus exposition format. A collector failing
// leaves its metrics out rather than failing the whole scrape.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(m.log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.reg,
	})
}

// warnOnce logs a misuse (unknown name, wrong kind, wrong label count) the first time only:
// a metric call is on hot paths and must neither panic nor flood the log.
func (m *Metrics) warnOnce(call, name string, err error) {
	if _, seen := m.warned.LoadOrStore(call+" "+name, struct{}{}); seen {
		return
	}
	m.log.Warn("metric call ignored", "call", call, "metric", name, "err", err)
}
