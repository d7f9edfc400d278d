package ports

import (
	"context"
	"iter"

	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
)

// The ports of the legacy single-table migration (seed 000 §9): reads of the legacy table
// merged into every query while the migration runs (dual read), and the backfill job's store.

// LegacyMessages reads the legacy table im_group_messages of a tenant. The reads mirror those of
// MessageStore, MessageSearch and MessageFinder for the legacy rows created in one month, so a
// reader can merge them with that month's table. Any read may fail with legacy.ErrGone when the
// table was retired meanwhile.
type LegacyMessages interface {
	// Status says whether the tenant has a legacy table and where its migration stands.
	Status(ctx context.Context, tenant string) (legacy.Status, error)
	// Segments are the topic's legacy rows per month of created_at: min/max seq, count and
	// times, from the cutover inventory once recorded, else from the table itself.
	Segments(ctx context.Context, tenant, topic string) (route.Route, error)
	// MaxSeq is the topic's highest legacy seq, 0 when it has none.
	MaxSeq(ctx context.Context, tenant, topic string) (int64, error)
	// Get reads the legacy row (topic, seq) if it was created in month m; message.ErrNotFound
	// otherwise.
	Get(ctx context.Context, tenant string, m month.Month, topic string, seq int64) (message.Message, error)
	// Page is MessageStore.Page over the legacy rows created in month m that m's month table
	// does not hold yet (a copied row is the month table's to answer).
	Page(ctx context.Context, tenant string, m month.Month, q message.PageQuery) ([]message.Message, error)
	// Search is MessageSearch.Search over the same rows.
	Search(ctx context.Context, tenant string, m month.Month, q SearchQuery) ([]message.Message, error)
	// FindByID reads the legacy row with msgID if it was created in month m;
	// message.ErrNotFound otherwise.
	FindByID(ctx context.Context, tenant string, m month.Month, msgID int64) (message.Message, error)
}

// MigrationStore keeps a tenant's migration job and does its database work: the cutover
// record, the copy batches, the streams verification compares, and the retirement of the
// legacy table.
type MigrationStore interface {
	// Plan reads the legacy table month by month and writes nothing.
	Plan(ctx context.Context, tenant string) (legacy.Plan, error)
	// Cutover records the watermark once, in one transaction: the cutover time, each topic's
	// highest legacy seq, and the inventory of each topic per month of created_at; the job
	// starts copying. A recorded cutover is returned as it is. legacy.ErrNoTable when the
	// tenant has no legacy table.
	Cutover(ctx context.Context, tenant string) (legacy.Job, error)
	// Job reads the job; Phase is legacy.PhaseNone when no cutover was recorded.
	Job(ctx context.Context, tenant string) (legacy.Job, error)
	// Progress reads the job with its months and its recent copy rate.
	Progress(ctx context.Context, tenant string) (legacy.Progress, error)
	// SetPhase changes the phase when the job is in one of c.From, else fails with
	// legacy.ErrPhaseChanged.
	SetPhase(ctx context.Context, tenant string, c legacy.PhaseChange) (legacy.Job, error)
	// Rerun starts the copy over from the first row, from one of the phases from: cursor,
	// counters and month verification are cleared, the phase becomes copying.
	Rerun(ctx context.Context, tenant string, from []legacy.Phase) (legacy.Job, error)
	// Reverify clears the months' verification and moves the job from one of the phases from
	// to verifying.
	Reverify(ctx context.Context, tenant string, from []legacy.Phase) (legacy.Job, error)
	// MarkPrepared records that the work after the cutover was done.
	MarkPrepared(ctx context.Context, tenant string) error
	// PrepareTable adds the index the copy cursor pages by, (created_at, message_id), to the
	// legacy table when it has none.
	PrepareTable(ctx context.Context, tenant string) error
	// Watermarks pages the topics' cutover seqs in topic order after `after`.
	Watermarks(ctx context.Context, tenant, after string, limit int) ([]legacy.TopicSeq, error)
	// CopyBatch copies up to limit legacy rows after the job's cursor, in copy order, into the
	// month tables of their created_at with INSERT IGNORE, grows the route mirror by what it
	// copied, and records the batch and the new cursor — all in one transaction. A batch of no
	// rows marks the copy complete. Every month the rows need must be in the catalog.
	CopyBatch(ctx context.Context, tenant string, limit int) (legacy.Batch, error)
	// CopyMessage copies one legacy row into its month table now, the same way, so it can be
	// changed there; found=false when the legacy table has no such row.
	CopyMessage(ctx context.Context, tenant, topic string, seq int64) (found bool, err error)
	// MonthTopics is the cutover inventory of month m.
	MonthTopics(ctx context.Context, tenant string, m month.Month) ([]legacy.TopicMonth, error)
	// LegacyRows streams the legacy rows created in month m, ordered by topic (as bytes), then seq.
	LegacyRows(ctx context.Context, tenant string, m month.Month) iter.Seq2[legacy.Row, error]
	// MonthRows streams the rows of m's month table whose topic has a watermark and whose seq is
	// at or below it, in the same order.
	MonthRows(ctx context.Context, tenant string, m month.Month) iter.Seq2[legacy.Row, error]
	// RecordVerification stores the month's outcome and its per-topic results, which name
	// topics of the month's inventory only.
	RecordVerification(ctx context.Context, tenant string, m month.Month, state legacy.VerifyState, results []legacy.TopicResult) error
	// Finish renames the legacy table to legacy.RetiredTable; it never drops anything. A table
	// already renamed is success.
	Finish(ctx context.Context, tenant string) error
	// Lease makes this process the tenant's only runner until release; ok=false when another
	// runner (on any node) holds it. A process that dies loses its lease.
	Lease(ctx context.Context, tenant string) (release func(), ok bool, err error)
}
