// Package snowflake issues msg_ids with sonyflake, tuned per DESIGN §1: 1 ms time unit,
// 12 sequence bits and 10 machine bits, i.e. 4096 ids per millisecond per node (the sonyflake
// defaults give only 25,600 ids per second) on up to 1024 nodes, for 2^41 ms ≈ 69 years.
package snowflake

import (
	"errors"
	"fmt"
	"time"

	"github.com/sony/sonyflake/v2"
)

// Bit layout and epoch of every id ever issued. Changing any of them would make new ids
// collide with or sort before stored ones, so they are fixed forever.
const (
	TimeUnit      = time.Millisecond
	BitsSequence  = 12
	BitsMachineID = 10
	MaxMachineID  = 1<<BitsMachineID - 1
)

// epoch is the sonyflake StartTime: 2025-01-01 00:00:00 UTC. Never change it.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrClockBehind means the node clock is earlier than the time of an id already issued, so
// new ids could repeat or sort before it.
var ErrClockBehind = errors.New("clock is behind the last issued id")

// Generator is a ports.IDGenerator for one node.
type Generator struct{ sf *sonyflake.Sonyflake }

// New returns a generator for machineID (0–1023), which must be unique among running nodes.
func New(machineID int) (*Generator, error) {
	if machineID < 0 || machineID > MaxMachineID {
		return nil, fmt.Errorf("snowflake: machine id %d outside 0-%d", machineID, MaxMachineID)
	}
	sf, err := sonyflake.New(sonyflake.Settings{
		TimeUnit:      TimeUnit,
		BitsSequence:  BitsSequence,
		BitsMachineID: BitsMachineID,
		StartTime:     epoch,
		MachineID:     func() (int, error) { return machineID, nil },
	})
	if err != nil {
		return nil, fmt.Errorf("snowflake: %w", err)
	}
	return &Generator{sf: sf}, nil
}

// NextID returns a new id, greater than every id this generator issued before.
func (g *Generator) NextID() (int64, error) {
	id, err := g.sf.NextID()
	if err != nil {
		return 0, fmt.Errorf("snowflake: next id: %w", err)
	}
	return id, nil
}

// TimeOf returns when id was generated, to the millisecond.
func (g *Generator) TimeOf(id int64) time.Time { return g.sf.ToTime(id) }

// CheckClock refuses to start while the clock is behind the time of lastID, the newest id
// persisted by any node (DESIGN §1): sonyflake only guards against clock steps within one
// process, not across a restart.
func (g *Generator) CheckClock(lastID int64) error {
	if lastID <= 0 {
		return nil
	}
	last, now := g.TimeOf(lastID), time.Now()
	if now.Before(last) {
		return fmt.Errorf("%w: now %s, last id at %s (%s ahead)", ErrClockBehind,
			now.UTC().Format(time.RFC3339Nano), last.UTC().Format(time.RFC3339Nano), last.Sub(now))
	}
	return nil
}
