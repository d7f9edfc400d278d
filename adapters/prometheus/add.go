package prometheus

import (
	"fmt"

	"github.com/imdhq/imd/ports"
)

var _ ports.CounterAdder = (*Metrics)(nil)

// Add adds value (≥ 0) to a counter.
func (m *Metrics) Add(name string, value float64, labels ...string) {
	v, ok := m.counters[name]
	if !ok {
		m.warnOnce("Add", name, fmt.Errorf("not a declared %s", counter))
		return
	}
	if value < 0 {
		m.warnOnce("Add", name, fmt.Errorf("negative value %v", value)) // a counter never goes down
		return
	}
	c, err := v.GetMetricWithLabelValues(labels...)
	if err != nil {
		m.warnOnce("Add", name, err)
		return
	}
	c.Add(value)
}
