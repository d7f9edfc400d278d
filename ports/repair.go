package ports

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
)

// The ports of the shard lifecycle's background work (seed 000 §3.4 rules 2–4, §3.5, §4, §5.3,
// §10): route repair, tenant-wide route rebuild, sampled reconciliation, compensation of
// writes into sealed months, dedup cleanup and the month-switch lock.

// RouteRepairs schedules a rebuild of a topic's Redis route from the MySQL mirror. Callers are
// the send path (route update failed after COMMIT) and the query path (route missing or
// suspect). Enqueue never blocks on the rebuild itself; it fails only when the request could
// not be recorded anywhere.
type RouteRepairs interface {
	Enqueue(ctx context.Context, tenant, topic string) error
}

// RepairTicket is one pending route repair. Version changes each time the topic is queued
// again, so finishing an old ticket never drops a newer request.
type RepairTicket struct {
	Topic   string
	Version int64
}

// RouteRepairQueue is the durable per-tenant set of topics waiting for a route repair, shared
// by every node (Redis), and the marker that the tenant's routes were built at least once.
type RouteRepairQueue interface {
	// Add queues the topic, or gives its pending ticket a new version.
	Add(ctx context.Context, tenant, topic string) error
	// Pending returns up to limit waiting tickets, in no particular order.
	Pending(ctx context.Context, tenant string, limit int) ([]RepairTicket, error)
	// Done removes the ticket unless the topic was queued again since it was read.
	Done(ctx context.Context, tenant string, t RepairTicket) error
	Len(ctx context.Context, tenant string) (int64, error)
	// RoutesBuilt reports whether the tenant's routes were rebuilt from the mirror since Redis
	// last lost them (the marker goes with the routes, e.g. on FLUSHALL).
	RoutesBuilt(ctx context.Context, tenant string) (bool, error)
	MarkRoutesBuilt(ctx context.Context, tenant string) error
}

// RouteMirror reads the MySQL route mirror tenant-wide and audits it against the month
// tables, which are the source of truth (seed 000 §3.4).
type RouteMirror interface {
	// Topics lists the topics of the mirror in ascending order after `after` ("" = from the
	// start), at most limit: keyset paging, so a tenant-wide walk never uses OFFSET.
	Topics(ctx context.Context, tenant, after string, limit int) ([]string, error)
	// TopicsIn is Topics restricted to topics with a segment in month m.
	TopicsIn(ctx context.Context, tenant string, m month.Month, after string, limit int) ([]string, error)
	// TopicsSince is TopicsIn restricted to topics whose newest message in m was created at
	// or after since: the topics a Redis failover may have left behind (DESIGN §5 "After a
	// Redis failover"). It reads every mirror row of m, so callers use it for rare walks.
	TopicsSince(ctx context.Context, tenant string, m month.Month, since time.Time, after string, limit int) ([]string, error)
	// TableSegment reads the topic's real range in m's table (min/max seq, row count, times);
	// found=false when the table holds none of it. It scans the topic's rows of one month, so
	// callers use it for small samples only.
	TableSegment(ctx context.Context, tenant string, m month.Month, topic string) (seg route.Segment, found bool, err error)
	// Recount rewrites the topic's mirror row of m from m's table, under the lock writers take
	// on the mirror, and returns the new segment (found=false: no rows, the mirror row is gone).
	Recount(ctx context.Context, tenant string, m month.Month, topic string) (seg route.Segment, found bool, err error)
}

// Compensation is a message whose fixed month no longer takes writes (sealed or archived): it
// is kept whole until an operator replays it (seed 000 §5.3), never dropped.
type Compensation struct {
	Message message.Message `json:"message"`
	Hash    string          `json:"hash"`   // payload hash, for the dedup record of a replay
	Reason  string          `json:"reason"` // why the write was refused
	At      time.Time       `json:"at"`     // when it was refused first
}

// CompensationList is the per-tenant list of refused late writes.
type CompensationList interface {
	// Push appends c unless its msg_id is listed already (client retries); added reports
	// whether it was new.
	Push(ctx context.Context, tenant string, c Compensation) (added bool, err error)
	// List returns the oldest limit entries.
	List(ctx context.Context, tenant string, limit int) ([]Compensation, error)
	Len(ctx context.Context, tenant string) (int64, error)
}

// Locks are short leases shared by every node (Redis SET NX PX), for work one node at a time
// should do, such as the month switch (seed 000 §4.3).
type Locks interface {
	// Acquire takes the lease name of tenant for ttl; ok=false when another holder has it.
	Acquire(ctx context.Context, tenant, name string, ttl time.Duration) (token string, ok bool, err error)
	// Release gives the lease back if token still holds it; an expired lease is left alone.
	Release(ctx context.Context, tenant, name, token string) error
	// Renew gives the lease token holds a fresh ttl; ok=false when it lapsed or another
	// holder has it, so a long holder learns it may no longer act (docs/DESIGN.md issue-32).
	Renew(ctx context.Context, tenant, name, token string, ttl time.Duration) (ok bool, err error)
}

// ShardHousekeeping is the periodic MySQL upkeep of the shard manager.
type ShardHousekeeping interface {
	// PurgeExpiredDedup deletes up to limit dedup records that expired before now, oldest
	// first, and returns how many went (seed 000 §3.5).
	PurgeExpiredDedup(ctx context.Context, tenant string, now time.Time, limit int) (int64, error)
	// RefreshStats copies m's row count and time range from the route mirror into the catalog
	// row, never counting the month table (seed 000 §6.6).
	RefreshStats(ctx context.Context, tenant string, m month.Month) error
}
