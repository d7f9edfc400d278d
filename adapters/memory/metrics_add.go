package memory

import "github.com/imdhq/imd/ports"

var _ ports.CounterAdder = (*Metrics)(nil)

// Add adds value to a counter.
func (m *Metrics) Add(name string, v float64, labels ...string) {
	m.mu.Lock()
	m.counts[metricKey(name, labels)] += v
	m.mu.Unlock()
}
