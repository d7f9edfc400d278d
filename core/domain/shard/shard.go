// Package shard holds the lifecycle of month tables (seed 000 §4, §10):
// prepared → writable → sealing → sealed → archived.
package shard

import (
	"errors"
	"fmt"
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
	// ErrMonthBehind: a new message was allocated in a month older than one the catalog had
	// already switched to at the allocation's instant, which only a stale Redis active month
	// hands out (a failover that missed the switch); the sender repairs the active month
	// forward and allocates again.
	ErrMonthBehind = errors.New("month behind a month already switched to")
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
	// ActiveSince is an instant, on the Redis clock, by which the month is the active one: its
	// first instant (recorded when the shard manager prepares it: the seq script switches to a
	// ready month as Redis TIME enters it), or, for an early switch, the instant the switch is
	// scheduled for, recorded before Redis learns of it (DESIGN §7.1), or the instant of a
	// fresh allocation stored in it (EarlierActive). Zero until recorded.
	ActiveSince time.Time
	// TableDropped: the month was archived and its table dropped; Table names what it was.
	// Only the admin listing fills it in (it asks MySQL per archived month).
	TableDropped bool
}

// Ready reports whether a month may become the active month (DESIGN §1).
func (s State) Ready() bool { return s == Prepared || s == Writable }

// AcceptsWrites reports whether writes whose fixed shard_month is this month may land.
func (s State) AcceptsWrites() bool { return s == Prepared || s == Writable || s == Sealing }

// NewestWritable is the month the active month must be at least: an early switch makes it
// writable once the instant it was scheduled for has passed, and a calendar switch is made
// writable by the pass after it (until then Redis TIME gives the month again). Zero for a
// catalog with no writable month.
func NewestWritable(infos []Info) month.Month {
	var newest month.Month
	for _, in := range infos {
		if in.State == Writable && in.Month > newest {
			newest = in.Month
		}
	}
	return newest
}

// BehindError is ErrMonthBehind with the months: Newer is the month the allocation should have
// had, so the sender raises the active month to it before it allocates again.
type BehindError struct {
	Month, Newer month.Month
}

func (e *BehindError) Error() string {
	return fmt.Sprintf("%s: %s allocated after the switch to %s", ErrMonthBehind, e.Month, e.Newer)
}

func (e *BehindError) Unwrap() error { return ErrMonthBehind }

// Superseding is the newest month after m that the catalog had already switched to at the
// instant at (ActiveSince before at), zero when none had. A fresh allocation in m at that
// instant came from a stale active month: Redis lost the switch. One allocated in m before the
// switch and written after it (a send in flight across a normal switch) is not superseded,
// since ActiveSince is never earlier than the switch itself. A zero at is never superseded.
func Superseding(m month.Month, at time.Time, catalog []Info) month.Month {
	if at.IsZero() {
		return 0
	}
	var newest month.Month
	for _, in := range catalog {
		if in.Month > m && in.Month > newest && !in.ActiveSince.IsZero() && in.ActiveSince.Before(at) {
			newest = in.Month
		}
	}
	return newest
}

// EarlierActive is the instant the catalog keeps for a month that is known to be active by at
// (a recorded switch, or a fresh allocation in it that is being stored), given the one it
// holds (zero: none): the earlier of the two, since each is an instant by which the month is
// active. moved reports whether it is at. A month is active by the instant of every fresh
// allocation stored in it, so recording that instant in the write that stores it keeps a
// Redis that later forgets an early switch from handing the month before out unrefused.
func EarlierActive(held, at time.Time) (earliest time.Time, moved bool) {
	if held.IsZero() || at.Before(held) {
		return at, true
	}
	return held, false
}
