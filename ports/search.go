package ports

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
)

// SearchQuery is one month's part of a short-term search (seed 000 §6.6).
type SearchQuery struct {
	// Topic limits the search to one topic; empty searches the whole tenant.
	Topic string
	// Text must occur in the message content (a plain substring, no wildcards); empty matches all.
	Text string
	// From and To bound created_at: From ≤ created_at < To.
	From, To time.Time
	Limit    int
}

// MessageSearch reads one month table for a search. The core validates the time range, picks
// the months and merges them; the store never decides which tables to read.
type MessageSearch interface {
	// Search returns up to q.Limit messages of month m matching q, status normal only, newest
	// first: created_at descending, then seq descending, then msg_id descending. A month missing
	// from the catalog fails with shard.ErrMonthMissing.
	Search(ctx context.Context, tenant string, m month.Month, q SearchQuery) ([]message.Message, error)
}
