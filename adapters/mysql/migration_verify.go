package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"slices"

	"github.com/imdhq/imd/adapters/mysql/legacydb"
	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/month"
)

// The verification streams. sqlc's :many loads a whole result into memory, and a month can
// hold millions of rows, so these two are read row by row. Both order topics by their bytes
// (utf8mb4_bin), which is how the core merges them.
const (
	// legacyRowsQuery uses the copy cursor index for the created_at range.
	legacyRowsQuery = `
SELECT topic, seqid, message_id, status, content, version
FROM im_group_messages
WHERE created_at >= ? AND created_at < ?
ORDER BY topic COLLATE utf8mb4_bin, seqid`
	// monthRowsQuery names the template; the month-table wrapper sends it to the month.
	monthRowsQuery = `
SELECT m.topic, m.seqid, m.message_id, m.status, m.content, m.version
FROM im_group_messages_tpl AS m
JOIN im_migration_topics AS w ON w.topic = m.topic AND m.seqid <= w.cutover_seq
ORDER BY m.topic COLLATE utf8mb4_bin, m.seqid`
)

// verifyChunk is how many per-topic results one statement records.
const verifyChunk = 500

// LegacyRows streams the legacy rows created in month m.
func (s *Migrations) LegacyRows(ctx context.Context, tenant string, m month.Month) iter.Seq2[legacy.Row, error] {
	return func(yield func(legacy.Row, error) bool) {
		t, err := s.cluster.tenant(tenant)
		if err != nil {
			yield(legacy.Row{}, err)
			return
		}
		rows, err := t.db.QueryContext(ctx, legacyRowsQuery, m.Start(), m.End())
		if err != nil {
			yield(legacy.Row{}, fmt.Errorf("legacy rows of %s: %w", m, gone(err)))
			return
		}
		streamRows(rows, yield)
	}
}

// MonthRows streams m's month-table rows at or below their topic's watermark.
func (s *Migrations) MonthRows(ctx context.Context, tenant string, m month.Month) iter.Seq2[legacy.Row, error] {
	return func(yield func(legacy.Row, error) bool) {
		t, err := s.cluster.tenant(tenant)
		if err != nil {
			yield(legacy.Row{}, err)
			return
		}
		table, err := t.months.on(ctx, t.db, m)
		if err != nil {
			yield(legacy.Row{}, fmt.Errorf("month rows of %s: %w", m, err))
			return
		}
		rows, err := table.QueryContext(ctx, monthRowsQuery)
		if err != nil {
			yield(legacy.Row{}, fmt.Errorf("month rows of %s: %w", m, err))
			return
		}
		streamRows(rows, yield)
	}
}

// streamRows yields each row until the consumer stops, and closes rows.
func streamRows(rows *sql.Rows, yield func(legacy.Row, error) bool) {
	defer rows.Close()
	for rows.Next() {
		var r legacy.Row
		var version int32
		// Scanning into []byte copies, so a row stays valid while the other stream moves on;
		// NULL content scans to nil.
		if err := rows.Scan(&r.Topic, &r.Seq, &r.MsgID, &r.Status, &r.Content, &version); err != nil {
			yield(legacy.Row{}, fmt.Errorf("scan row: %w", err))
			return
		}
		r.Version = int(version)
		if !yield(r, nil) {
			return
		}
	}
	if err := rows.Err(); err != nil {
		yield(legacy.Row{}, fmt.Errorf("read rows: %w", gone(err)))
	}
}

// RecordVerification stores the month's per-topic results and its outcome in one transaction.
func (s *Migrations) RecordVerification(ctx context.Context, tenant string, m month.Month, state legacy.VerifyState, results []legacy.TopicResult) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	err = inLegacyTx(ctx, t.db, nil, func(tx *sql.Tx, q *legacydb.Queries) error {
		for chunk := range slices.Chunk(results, verifyChunk) {
			rec := rowBatch{sep: sepValues}
			for _, r := range chunk {
				status := legacy.VerifiedOK
				if !r.OK() {
					status = legacy.Mismatched
				}
				p := legacydb.RecordSegmentVerificationParams{
					Topic: r.Topic, ShardMonth: m.String(), VerifyStatus: string(status), LegacyHash: r.LegacyHash, MonthHash: r.MonthHash,
				}
				if err := rec.addWith(func(rr *recorder) error { return legacydb.New(rr).RecordSegmentVerification(ctx, p) }); err != nil {
					return err
				}
			}
			if err := rec.exec(ctx, tx); err != nil {
				return fmt.Errorf("record topic results: %w", err)
			}
		}
		return q.RecordMonthVerification(ctx, legacydb.RecordMonthVerificationParams{VerifyStatus: string(state), ShardMonth: m.String()})
	})
	if err != nil {
		return fmt.Errorf("record verification of %s: %w", m, err)
	}
	return nil
}
