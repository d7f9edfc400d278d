// Package stats holds the tenant statistics operators read. They come from summaries the write
// path keeps (the month catalog, the route mirror and the daily summary), never from counting
// month tables (seed 000 §6.6).
package stats

import (
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
)

// MirrorMonth is one month of the route mirror, summed over its topics.
type MirrorMonth struct {
	Month       month.Month
	Messages    int64 // message_count summed: stored rows, tombstones included
	Topics      int64
	GroupTopics int64 // the rest are P2P topics
	FirstAt     time.Time
	LastAt      time.Time
}

// Month is the statistics of one month table.
type Month struct {
	Month       month.Month
	Table       string
	State       shard.State
	Messages    int64
	Topics      int64
	GroupTopics int64
	P2PTopics   int64
	FirstAt     time.Time
	LastAt      time.Time
}

// Totals counts the tenant's social graph.
type Totals struct {
	Users  int64
	Groups int64
}

// Day is one UTC calendar day of the daily summary (t_daily_stats): the messages stored that
// day, split by conversation kind. Days without messages have no row.
type Day struct {
	Day           time.Time // midnight UTC
	Messages      int64     // GroupMessages + P2PMessages
	GroupMessages int64
	P2PMessages   int64
}

// DayOf is the day a message created at t counts for: its UTC date.
func DayOf(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Tenant is everything the stats endpoint answers.
type Tenant struct {
	Totals Totals
	Months []Month
	Days   []Day
}
