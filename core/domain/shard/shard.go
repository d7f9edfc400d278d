// Package shard holds the lifecycle of month tables (seed 000 §4, §10):
// prepared → writable → sealing → sealed → archived.
package shard

import (
	"errors"
	"time"

	"github.com/imdhq/imd/core/domain/month"
)

// State of a month table in the catalog.
type State string

const (
	Prepared State = "prepared"
	Writable State = "writable"
	Sealing  State = "sealing"
	Sealed   State = "sealed"
	Archived State = "archived"
)

var (
	// ErrMonthNotWritable: the month's table no longer takes writes (sealed or archived); such
	// late writes go to compensation (seed 000 §5.3).
	ErrMonthNotWritable = errors.New("month table not writable")
	// ErrMonthMissing: the month's table does not exist (yet); retriable (seed 000 §5.3).
	ErrMonthMissing = errors.New("month table missing")
	// ErrMonthBehind: a new message would land in a month older than the catalog's newest
	// writable month, which only a stale Redis active month hands out (a failover that missed
	// an early switch); the sender repairs the active month forward and allocates again.
	ErrMonthBehind = errors.New("month behind the newest writable month")
)

// Info is one catalog row.
type Info struct {
	Month        month.Month
	Table        string
	State        State
	RowCount     int64
	MinCreatedAt time.Time
	MaxCreatedAt time.Time
	UpdatedAt    time.Time
	// TableDropped: the month was archived and its table dropped; Table names what it was.
	// Only the admin listing fills it in (it asks MySQL per archived month).
	TableDropped bool
}

// Ready reports whether a month may become the active month (DESIGN §1).
func (s State) Ready() bool { return s == Prepared || s == Writable }

// AcceptsWrites reports whether writes whose fixed shard_month is this month may land.
func (s State) AcceptsWrites() bool { return s == Prepared || s == Writable || s == Sealing }

// NewestWritable is the month the active month must be at least: an early switch writes it to
// the catalog before it moves Redis, and a calendar switch is made writable by the pass after
// it (until then Redis TIME gives the month again). Zero for a catalog with no writable month.
func NewestWritable(infos []Info) month.Month {
	var newest month.Month
	for _, in := range infos {
		if in.State == Writable && in.Month > newest {
			newest = in.Month
		}
	}
	return newest
}
