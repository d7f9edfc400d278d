package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/imdhq/imd/adapters/mysql/legacydb"
	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
)

// copyChunk bounds the ids one copy statement names.
const copyChunk = 1000

// errStopped: the job left the copying phase (paused, say) before the batch could start.
var errStopped = fmt.Errorf("%w: the migration is not copying", legacy.ErrPhaseChanged)

// CopyBatch copies the next batch in one READ COMMITTED transaction, like the group-commit
// writer's, so it takes no gap locks that live sends would queue behind. The job row is locked
// first: a batch and a phase change never interleave, and a second runner could not advance the
// same cursor.
func (s *Migrations) CopyBatch(ctx context.Context, tenant string, limit int) (legacy.Batch, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return legacy.Batch{}, err
	}
	started := time.Now().UTC().Truncate(time.Millisecond)
	var b legacy.Batch
	err = inLegacyTx(ctx, t.db, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, func(tx *sql.Tx, q *legacydb.Queries) error {
		b = legacy.Batch{}
		row, err := q.LockMigrationJob(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return errStopped
		}
		if err != nil {
			return fmt.Errorf("lock migration job: %w", err)
		}
		job, err := jobOf(row)
		if err != nil {
			return err
		}
		if job.Phase != legacy.PhaseCopying {
			return errStopped
		}
		b.Start, b.End = job.Cursor, job.Cursor
		start := job.Cursor.CreatedAt
		if job.Cursor.IsZero() {
			start = zeroCursorTime
		}
		rows, err := q.LegacyBatch(ctx, legacydb.LegacyBatchParams{AfterTime: start, AfterID: job.Cursor.MsgID, Limit: int32(limit)})
		if err != nil {
			return fmt.Errorf("read legacy batch: %w", gone(err))
		}
		if len(rows) == 0 {
			return q.MarkCopyDone(ctx, int32(job.Run))
		}
		keys := make([]legacyKey, len(rows))
		for i, r := range rows {
			keys[i] = legacyKey(r)
		}
		res, err := copyRows(ctx, tx, t, keys)
		if err != nil {
			return err
		}
		last := rows[len(rows)-1]
		b.End = legacy.Cursor{CreatedAt: last.CreatedAt.UTC(), MsgID: last.MessageID}
		b.Rows, b.Copied, b.Skipped, b.Failed, b.FailedKeys = len(rows), res.total.copied, res.total.skipped, res.total.failed, res.failedKeys
		return recordBatch(ctx, q, job, start, b, res, started)
	})
	if errors.Is(err, errStopped) {
		return legacy.Batch{}, errStopped
	}
	if err != nil {
		return legacy.Batch{}, fmt.Errorf("copy batch of %s: %w", tenant, err)
	}
	b.Took = time.Since(started)
	return b, nil
}

// recordBatch advances the cursor (only from where this batch started), the counters of the
// job and of each month, and writes the batch row.
func recordBatch(ctx context.Context, q *legacydb.Queries, job legacy.Job, start time.Time, b legacy.Batch, res copyResult, started time.Time) error {
	n, err := q.AdvanceMigrationCursor(ctx, legacydb.AdvanceMigrationCursorParams{
		EndTime: b.End.CreatedAt, EndID: b.End.MsgID, Copied: int64(b.Copied), Skipped: int64(b.Skipped),
		Failed: int64(b.Failed), Run: int32(job.Run), StartTime: start, StartID: job.Cursor.MsgID,
	})
	if err != nil {
		return fmt.Errorf("advance cursor: %w", err)
	}
	if n != 1 {
		return fmt.Errorf("%w: the cursor moved under the batch", legacy.ErrPhaseChanged)
	}
	for _, m := range slices.Sorted(maps.Keys(res.months)) {
		c := res.months[m]
		if err := q.AddMonthProgress(ctx, legacydb.AddMonthProgressParams{
			Copied: int64(c.copied), Skipped: int64(c.skipped), Failed: int64(c.failed), ShardMonth: m.String(),
		}); err != nil {
			return fmt.Errorf("month progress of %s: %w", m, err)
		}
	}
	var failedKeys sql.NullString
	if len(b.FailedKeys) > 0 {
		raw, err := json.Marshal(b.FailedKeys)
		if err != nil {
			return fmt.Errorf("encode failed rows: %w", err)
		}
		failedKeys = sql.NullString{String: string(raw), Valid: true}
	}
	err = q.InsertMigrationBatch(ctx, legacydb.InsertMigrationBatchParams{
		Run: int32(job.Run), StartCreatedAt: start, StartMessageID: job.Cursor.MsgID,
		EndCreatedAt: b.End.CreatedAt, EndMessageID: b.End.MsgID, RowsRead: int32(b.Rows),
		Copied: int32(b.Copied), Skipped: int32(b.Skipped), Failed: int32(b.Failed), FailedKeys: failedKeys,
		StartedAt: started, FinishedAt: time.Now().UTC(),
	})
	if err != nil {
		return fmt.Errorf("record batch: %w", err)
	}
	return nil
}

// CopyMessage copies one legacy row into its month table in a transaction of its own.
func (s *Migrations) CopyMessage(ctx context.Context, tenant, topic string, sq int64) (bool, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return false, err
	}
	found := false
	err = inLegacyTx(ctx, t.db, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, func(tx *sql.Tx, q *legacydb.Queries) error {
		r, err := q.LegacyKey(ctx, legacydb.LegacyKeyParams{Topic: topic, Seqid: sq})
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read legacy %s seq %d: %w", topic, sq, gone(err))
		}
		found = true
		res, err := copyRows(ctx, tx, t, []legacyKey{legacyKey(r)})
		if err == nil && res.total.failed > 0 {
			// Another message of the month holds its (topic, seq) or client_msg_id.
			err = seq.ErrTaken
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("copy legacy %s seq %d: %w", topic, sq, err)
	}
	return found, nil
}

// counts is what happened to some rows.
type counts struct{ copied, skipped, failed int }

// copyResult is what copyRows did, in all and per month.
type copyResult struct {
	total      counts
	months     map[month.Month]counts
	failedKeys []legacy.TopicSeq
}

// legacyKey names a legacy row and says where it goes.
type legacyKey struct {
	MessageID int64
	Topic     string
	Seqid     int64
	CreatedAt time.Time
}

// copyRows copies legacy rows into the month tables of their created_at within tx: a row the
// month table holds already (same msg_id: an earlier run, or a copy ahead of an edit) is
// skipped; INSERT IGNORE leaves out a row whose (topic, seq) or client_msg_id another message
// holds, which counts as failed. The rows move inside the server; only their keys pass through
// here. The route mirror grows by what was copied, with the writer's upsert (seed 000 §5.2),
// in the same transaction.
func copyRows(ctx context.Context, tx *sql.Tx, t *tenantDB, keys []legacyKey) (copyResult, error) {
	res := copyResult{months: make(map[month.Month]counts)}
	byMonth := make(map[month.Month][]legacyKey)
	for _, k := range keys {
		m := month.Of(k.CreatedAt)
		byMonth[m] = append(byMonth[m], k)
	}
	ranges := make(route.Mirror)
	for _, m := range slices.Sorted(maps.Keys(byMonth)) {
		table, err := t.months.on(ctx, tx, m)
		if err != nil {
			return copyResult{}, fmt.Errorf("copy into %s: %w", m, err)
		}
		c, copied, failed, err := copyMonth(ctx, legacydb.New(table), byMonth[m])
		if err != nil {
			return copyResult{}, fmt.Errorf("copy into %s: %w", m, err)
		}
		res.months[m] = c
		res.total.copied += c.copied
		res.total.skipped += c.skipped
		res.total.failed += c.failed
		for _, k := range failed {
			if len(res.failedKeys) < legacy.MaxFailedKeys {
				res.failedKeys = append(res.failedKeys, legacy.TopicSeq{Topic: k.Topic, Seq: k.Seqid})
			}
		}
		for _, k := range copied {
			ranges.Grow(k.Topic, m, k.Seqid, k.CreatedAt)
		}
	}
	if err := growMirror(ctx, tx, ranges); err != nil {
		return copyResult{}, err
	}
	return res, nil
}

// copyMonth copies the rows of one month through q (bound to its table) and returns which it
// copied and which failed.
func copyMonth(ctx context.Context, q *legacydb.Queries, keys []legacyKey) (c counts, copied, failed []legacyKey, err error) {
	stored, err := storedIDs(ctx, q, keys)
	if err != nil {
		return counts{}, nil, nil, err
	}
	var todo []legacyKey
	for _, k := range keys {
		if !stored[k.MessageID] {
			todo = append(todo, k)
		}
	}
	c.skipped = len(keys) - len(todo)
	var inserted int64
	for chunk := range slices.Chunk(todo, copyChunk) {
		n, err := q.CopyLegacyRows(ctx, idsOf(chunk))
		if err != nil {
			return counts{}, nil, nil, fmt.Errorf("copy rows: %w", gone(err))
		}
		inserted += n
	}
	if inserted == int64(len(todo)) {
		c.copied = len(todo)
		return c, todo, nil, nil
	}
	// Some rows were ignored: find which by reading the ids back.
	if stored, err = storedIDs(ctx, q, todo); err != nil {
		return counts{}, nil, nil, err
	}
	for _, k := range todo {
		if stored[k.MessageID] {
			copied = append(copied, k)
		} else {
			failed = append(failed, k)
		}
	}
	c.copied, c.failed = len(copied), len(failed)
	return c, copied, failed, nil
}

func idsOf(keys []legacyKey) []int64 {
	ids := make([]int64, len(keys))
	for i, k := range keys {
		ids[i] = k.MessageID
	}
	return ids
}

// storedIDs reads which of the rows the month table holds, by msg_id.
func storedIDs(ctx context.Context, q *legacydb.Queries, keys []legacyKey) (map[int64]bool, error) {
	out := make(map[int64]bool, len(keys))
	for chunk := range slices.Chunk(keys, copyChunk) {
		got, err := q.StoredMessageIDs(ctx, idsOf(chunk))
		if err != nil {
			return nil, fmt.Errorf("read stored ids: %w", err)
		}
		for _, id := range got {
			out[id] = true
		}
	}
	return out, nil
}

// growMirror upserts the copied ranges into the route mirror, in key order like the writer.
func growMirror(ctx context.Context, tx *sql.Tx, ranges route.Mirror) error {
	if len(ranges) == 0 {
		return nil
	}
	mirror := rowBatch{sep: sepValues}
	for _, topic := range slices.Sorted(maps.Keys(ranges)) {
		for _, m := range slices.Sorted(maps.Keys(ranges[topic])) {
			r := ranges[topic][m]
			p := sqlcdb.UpsertTopicShardsParams{
				Topic: topic, ShardMonth: m.String(), MinSeq: r.MinSeq, MaxSeq: r.MaxSeq, MessageCount: r.Count,
				MinCreatedAt: r.MinCreatedAt, MaxCreatedAt: r.MaxCreatedAt,
			}
			if err := mirror.add(func(q *sqlcdb.Queries) error { return q.UpsertTopicShards(ctx, p) }); err != nil {
				return err
			}
		}
	}
	if err := mirror.exec(ctx, tx); err != nil {
		return fmt.Errorf("upsert route mirror: %w", err)
	}
	return nil
}
