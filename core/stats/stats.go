// Package stats holds the tenant statistics operators read. They come from summaries the write
// path keeps (the month catalog and the route mirror), never from counting month tables
// (seed 000 §6.6).
package stats

import (
	"time"

	"imd/core/month"
	"imd/core/shard"
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

// Tenant is everything the stats endpoint answers.
type Tenant struct {
	Totals Totals
	Months []Month
}
