package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// MonthRows implements ports.MonthRows and ports.MonthCatalog: whole-row access to month tables
// for archive export and restore, their DDL, and the retention purge of a month's MySQL rows.
type MonthRows struct {
	cluster *Cluster
}

var (
	_ ports.MonthRows    = (*MonthRows)(nil)
	_ ports.MonthCatalog = (*MonthRows)(nil)
)

// NewMonthRows returns month-row access over the provisioned tenants of c.
func NewMonthRows(c *Cluster) *MonthRows { return &MonthRows{cluster: c} }

// Restore batches stay far below MariaDB's default max_allowed_packet (16 MB), however large
// the rows' content.
const (
	restoreBatchRows  = 500
	restoreBatchBytes = 4 << 20
)

// Rows reads a topic's rows of one month in seq order.
func (s *MonthRows) Rows(ctx context.Context, tenant string, m month.Month, topicName string, after int64, limit int) ([]archive.Record, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	table, err := t.months.on(ctx, t.db, m)
	if err != nil {
		return nil, fmt.Errorf("rows of %s: %w", topicName, err)
	}
	rows, err := sqlcdb.New(table).ArchiveRows(ctx, sqlcdb.ArchiveRowsParams{Topic: topicName, After: after, Limit: int32(min(limit, 1<<30))})
	if err != nil {
		return nil, fmt.Errorf("rows of %s in %s: %w", topicName, m, err)
	}
	out := make([]archive.Record, len(rows))
	for i, r := range rows {
		out[i] = toRecord(r)
	}
	return out, nil
}

// Count counts m's rows.
func (s *MonthRows) Count(ctx context.Context, tenant string, m month.Month) (int64, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return 0, err
	}
	table, err := t.months.on(ctx, t.db, m)
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", m, err)
	}
	n, err := sqlcdb.New(table).CountMonthRows(ctx)
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", m, err)
	}
	return n, nil
}

// TableExists asks information_schema, since the catalog keeps a dropped month's row.
func (s *MonthRows) TableExists(ctx context.Context, tenant string, m month.Month) (bool, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return false, err
	}
	name, err := m.Table()
	if err != nil {
		return false, err
	}
	var n int
	err = t.db.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look up %s: %w", name, err)
	}
	return n > 0, nil
}

// CreateTable recreates a registered month's table from the template (restore). It runs on
// its own, never inside a write transaction.
func (s *MonthRows) CreateTable(ctx context.Context, tenant string, m month.Month) error {
	t, name, err := s.registeredTable(ctx, tenant, m)
	if err != nil {
		return err
	}
	// name passed the whitelist and the catalog; identifiers cannot be bound as parameters.
	if _, err := t.db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS `"+name+"` LIKE `"+month.TemplateTable+"`"); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	return nil
}

// DropTable drops a registered month's table; the catalog row stays.
func (s *MonthRows) DropTable(ctx context.Context, tenant string, m month.Month) error {
	t, name, err := s.registeredTable(ctx, tenant, m)
	if err != nil {
		return err
	}
	// name passed the whitelist and the catalog; identifiers cannot be bound as parameters.
	if _, err := t.db.ExecContext(ctx, "DROP TABLE IF EXISTS `"+name+"`"); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	return nil
}

func (s *MonthRows) registeredTable(ctx context.Context, tenant string, m month.Month) (*tenantDB, string, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, "", err
	}
	name, err := t.months.table(ctx, m)
	if err != nil {
		return nil, "", fmt.Errorf("month table %s: %w", m, err)
	}
	return t, name, nil
}

// Load inserts records in multi-row batches, each its own statement: a restore that stops
// half-way is simply run again, since rows already there are kept.
func (s *MonthRows) Load(ctx context.Context, tenant string, m month.Month, recs []archive.Record) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	table, err := t.months.on(ctx, t.db, m)
	if err != nil {
		return fmt.Errorf("load %s: %w", m, err)
	}
	for len(recs) > 0 {
		b := rowBatch{sep: sepValues}
		size := 0
		for len(recs) > 0 && b.rows < restoreBatchRows && (b.rows == 0 || size < restoreBatchBytes) {
			p := restoreRow(recs[0])
			size += len(p.Content.String) + len(p.Head.String) + len(p.MentionedUserIds.String)
			if err := b.add(func(q *sqlcdb.Queries) error { return q.RestoreRows(ctx, p) }); err != nil {
				return fmt.Errorf("load %s: %w", m, err)
			}
			recs = recs[1:]
		}
		if err := b.exec(ctx, table); err != nil {
			return fmt.Errorf("load %s: %w", m, err)
		}
	}
	return nil
}

// DeleteMirrorRow removes the route-mirror row of (topic, m).
func (s *MonthRows) DeleteMirrorRow(ctx context.Context, tenant, topicName string, m month.Month) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.DeleteMirrorRow(ctx, sqlcdb.DeleteMirrorRowParams{Topic: topicName, ShardMonth: m.String()}); err != nil {
		return fmt.Errorf("delete mirror row %s %s: %w", topicName, m, err)
	}
	return nil
}

// Unregister removes m's catalog row.
func (s *MonthRows) Unregister(ctx context.Context, tenant string, m month.Month) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.UnregisterMonth(ctx, m.String()); err != nil {
		return fmt.Errorf("unregister %s: %w", m, err)
	}
	return nil
}

func toRecord(r sqlcdb.ImGroupMessagesTpl) archive.Record {
	return archive.Record{
		MessageID: r.MessageID, Topic: r.Topic, GroupID: r.GroupID, ConversationID: r.ConversationID,
		Seq: r.Seqid, From: r.FromUser, ClientMsgID: nullString(r.ClientMsgID), Type: r.MsgType, Status: r.Status,
		Content: nullString(r.Content), Head: nullString(r.Head), Mentions: nullString(r.MentionedUserIds),
		MentionAll: r.MentionAll, ReplySeq: nullInt(r.ReplySeqid), RootSeq: nullInt(r.RootSeqid),
		FileCount: r.FileCount, ContentSize: r.ContentSize, HasRisk: r.HasRisk, AuditStatus: r.AuditStatus,
		Version: r.Version, RecalledAt: nullTime(r.RecalledAt), RecalledBy: nullInt(r.RecalledBy),
		EditedAt: nullTime(r.EditedAt), DeletedAt: nullTime(r.DeletedAt), ExpiresAt: nullTime(r.ExpiresAt),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}

func restoreRow(r archive.Record) sqlcdb.RestoreRowsParams {
	return sqlcdb.RestoreRowsParams{
		MessageID: r.MessageID, Topic: r.Topic, GroupID: r.GroupID, ConversationID: r.ConversationID,
		Seqid: r.Seq, FromUser: r.From, ClientMsgID: sqlString(r.ClientMsgID), MsgType: r.Type, Status: r.Status,
		Content: sqlString(r.Content), Head: sqlString(r.Head), MentionedUserIds: sqlString(r.Mentions),
		MentionAll: r.MentionAll, ReplySeqid: sqlInt(r.ReplySeq), RootSeqid: sqlInt(r.RootSeq),
		FileCount: r.FileCount, ContentSize: r.ContentSize, HasRisk: r.HasRisk, AuditStatus: r.AuditStatus,
		Version: r.Version, RecalledAt: sqlTime(r.RecalledAt), RecalledBy: sqlInt(r.RecalledBy),
		EditedAt: sqlTime(r.EditedAt), DeletedAt: sqlTime(r.DeletedAt), ExpiresAt: sqlTime(r.ExpiresAt),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func nullString(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	return &v.String
}

func nullInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

// nullTimeUTC is t in UTC, zero when NULL.
func nullTimeUTC(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

func nullTime(v sql.NullTime) *time.Time {
	if !v.Valid {
		return nil
	}
	t := v.Time.UTC()
	return &t
}

func sqlString(p *string) sql.NullString {
	if p == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *p, Valid: true}
}

func sqlInt(p *int64) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *p, Valid: true}
}

func sqlTime(p *time.Time) sql.NullTime {
	if p == nil {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: *p, Valid: true}
}
