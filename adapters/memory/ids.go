package memory

import (
	"sync"
	"time"
)

// IDs issues increasing ids whose time is the clock's time: id = unix ms << 22 | counter, so
// TimeOf round-trips. Its epoch is Unix's, not the snowflake adapter's.
type IDs struct {
	clock interface{ Now() time.Time }

	mu   sync.Mutex
	last int64
}

// NewIDs returns a generator over clock.
func NewIDs(clock interface{ Now() time.Time }) *IDs { return &IDs{clock: clock} }

// NextID returns a new, strictly increasing id.
func (g *IDs) NextID() (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.clock.Now().UnixMilli() << 22
	if id <= g.last {
		id = g.last + 1
	}
	g.last = id
	return id, nil
}

// TimeOf returns the time an id was issued.
func (g *IDs) TimeOf(id int64) time.Time { return time.UnixMilli(id >> 22).UTC() }

// Compose builds the id issued at t with sequence and machine id in the low 22 bits, so TimeOf
// round-trips it like the snowflake adapter's (test data of an earlier deployment).
func (g *IDs) Compose(t time.Time, sequence, machineID int) (int64, error) {
	return t.UnixMilli()<<22 | int64(sequence&0xfff)<<10 | int64(machineID&0x3ff), nil
}
