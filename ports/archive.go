package ports

import (
	"context"

	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/month"
)

// The ports of archiving and retention (seed 000 §10, §3.3 rule 5). A month table is always
// addressed by its month, never by a name from a request.

// MonthRows reads and writes whole rows of a month table, for export and restore, and runs the
// DDL these need. Rows ignores the catalog state: archiving reads a sealed month.
type MonthRows interface {
	// Rows returns up to limit rows of topic in m's table with seq > after, ascending by seq,
	// tombstones included.
	Rows(ctx context.Context, tenant string, m month.Month, topic string, after int64, limit int) ([]archive.Record, error)
	// Count is the number of rows in m's table (one scan; archiving only).
	Count(ctx context.Context, tenant string, m month.Month) (int64, error)
	// TableExists reports whether m's table exists.
	TableExists(ctx context.Context, tenant string, m month.Month) (bool, error)
	// CreateTable creates m's table from the template when it is missing; the catalog row of
	// m must exist already.
	CreateTable(ctx context.Context, tenant string, m month.Month) error
	// Load inserts records into m's table; a row whose msg_id is there already is kept as is.
	Load(ctx context.Context, tenant string, m month.Month, recs []archive.Record) error
	// DropTable drops m's table; a missing table is no error. The catalog row stays.
	DropTable(ctx context.Context, tenant string, m month.Month) error
}

// MonthCatalog removes what MySQL keeps of a purged month besides its table.
type MonthCatalog interface {
	// DeleteMirrorRow removes the route-mirror row of (topic, m).
	DeleteMirrorRow(ctx context.Context, tenant, topic string, m month.Month) error
	// Unregister removes m's catalog row; an absent row is no error.
	Unregister(ctx context.Context, tenant string, m month.Month) error
}

// RoutePurger removes one month's segment from a topic's Redis route (route ZSET member and
// route_meta field), when the retention policy ends that month (seed 000 §3.3 rule 5).
type RoutePurger interface {
	RemoveMonth(ctx context.Context, tenant, topic string, m month.Month) error
}

// DeliverBacklog finds delivery work still pending for a month's messages: such a month is not
// archived yet (seed 000 §10: no backlog, no dead letters).
type DeliverBacklog interface {
	// MonthBacklog counts the jobs of m's messages waiting, being processed and dead-lettered.
	MonthBacklog(ctx context.Context, tenant string, m month.Month) (archive.Backlog, error)
}
