package memory

import (
	"strings"
	"sync"
)

// Metrics records metric calls so tests can assert on them.
type Metrics struct {
	mu     sync.Mutex
	counts map[string]float64
}

// NewMetrics returns an empty recorder.
func NewMetrics() *Metrics { return &Metrics{counts: make(map[string]float64)} }

func metricKey(name string, labels []string) string {
	if len(labels) == 0 {
		return name
	}
	return name + "{" + strings.Join(labels, ",") + "}"
}

// Inc adds one to a counter.
func (m *Metrics) Inc(name string, labels ...string) {
	m.mu.Lock()
	m.counts[metricKey(name, labels)]++
	m.mu.Unlock()
}

// Add adds value to a counter.
func (m *Metrics) Add(name string, v float64, labels ...string) {
	m.mu.Lock()
	m.counts[metricKey(name, labels)] += v
	m.mu.Unlock()
}

// Observe counts observations (the values are not kept).
func (m *Metrics) Observe(name string, _ float64, labels ...string) { m.Inc(name, labels...) }

// Set stores a gauge value.
func (m *Metrics) Set(name string, v float64, labels ...string) {
	m.mu.Lock()
	m.counts[metricKey(name, labels)] = v
	m.mu.Unlock()
}

// Count returns the counter (or gauge) value for name and labels.
func (m *Metrics) Count(name string, labels ...string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[metricKey(name, labels)]
}
