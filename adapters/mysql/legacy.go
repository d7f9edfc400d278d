package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/imdhq/imd/adapters/mysql/legacydb"
	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// Legacy implements ports.LegacyMessages over the legacy table im_group_messages of each tenant
// database (seed 000 §9). Its reads skip rows the month table holds already, so a reader merging
// them with the month table sees each message once.
type Legacy struct {
	cluster *Cluster
	// cutover remembers the tenants whose cutover inventory exists: it is written once and
	// never removed, and from then on answers the routes instead of the legacy table.
	cutover sync.Map // tenant → true
}

var _ ports.LegacyMessages = (*Legacy)(nil)

// NewLegacy returns the legacy reads over the provisioned tenants of c.
func NewLegacy(c *Cluster) *Legacy { return &Legacy{cluster: c} }

// Status reports whether the legacy table exists and the job's phase.
func (l *Legacy) Status(ctx context.Context, tenant string) (legacy.Status, error) {
	t, err := l.cluster.tenant(tenant)
	if err != nil {
		return legacy.Status{}, err
	}
	present, err := tableExists(ctx, t.db, legacy.Table)
	if err != nil {
		return legacy.Status{}, err
	}
	job, err := readJob(ctx, legacydb.New(t.db))
	if err != nil {
		return legacy.Status{}, err
	}
	return legacy.Status{Present: present, Phase: job.Phase}, nil
}

// MaxSeq is the topic's highest legacy seq (one dive into uk_topic_seq).
func (l *Legacy) MaxSeq(ctx context.Context, tenant, topic string) (int64, error) {
	t, err := l.cluster.tenant(tenant)
	if err != nil {
		return 0, err
	}
	n, err := legacydb.New(t.db).LegacyMaxSeq(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("legacy max seq of %s: %w", topic, gone(err))
	}
	return n, nil
}

// Segments are the topic's legacy months: from the cutover inventory once it exists, else
// grouped from the table.
func (l *Legacy) Segments(ctx context.Context, tenant, topic string) (route.Route, error) {
	t, err := l.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	q := legacydb.New(t.db)
	cut, err := l.cutoverRecorded(ctx, tenant, q)
	if err != nil {
		return nil, err
	}
	var segs []route.Segment
	if cut {
		rows, err := q.InventorySegments(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("legacy inventory of %s: %w", topic, err)
		}
		for _, r := range rows {
			m, err := month.Parse(r.ShardMonth)
			if err != nil {
				return nil, fmt.Errorf("legacy inventory of %s: %w", topic, err)
			}
			segs = append(segs, route.Segment{Month: m, MinSeq: r.MinSeq, MaxSeq: r.MaxSeq, Count: r.RowCount,
				MinCreatedAt: r.MinCreatedAt.UTC(), MaxCreatedAt: r.MaxCreatedAt.UTC()})
		}
		return route.Normalize(segs), nil
	}
	rows, err := q.LegacyLiveSegments(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("legacy segments of %s: %w", topic, gone(err))
	}
	for _, r := range rows {
		m := month.Month(r.ShardMonth)
		if !m.Valid() {
			return nil, fmt.Errorf("legacy segments of %s: %w: created in %d", topic, month.ErrInvalid, r.ShardMonth)
		}
		segs = append(segs, route.Segment{Month: m, MinSeq: r.MinSeq, MaxSeq: r.MaxSeq, Count: r.RowCount,
			MinCreatedAt: r.MinCreatedAt.UTC(), MaxCreatedAt: r.MaxCreatedAt.UTC()})
	}
	return route.Normalize(segs), nil
}

// Get reads the legacy row (topic, seq) when it was created in m.
func (l *Legacy) Get(ctx context.Context, tenant string, m month.Month, topic string, seq int64) (message.Message, error) {
	t, err := l.cluster.tenant(tenant)
	if err != nil {
		return message.Message{}, err
	}
	r, err := legacydb.New(t.db).LegacyGet(ctx, legacydb.LegacyGetParams{Topic: topic, Seqid: seq})
	if errors.Is(err, sql.ErrNoRows) {
		return message.Message{}, fmt.Errorf("legacy get %s seq %d: %w", topic, seq, message.ErrNotFound)
	}
	if err != nil {
		return message.Message{}, fmt.Errorf("legacy get %s seq %d: %w", topic, seq, gone(err))
	}
	if month.Of(r.ImGroupMessage.CreatedAt) != m {
		return message.Message{}, fmt.Errorf("legacy get %s seq %d in %s: %w", topic, seq, m, message.ErrNotFound)
	}
	return legacyMessage(r.ImGroupMessage, r.ConversationID, m)
}

// FindByID reads the legacy row with msgID when it was created in m.
func (l *Legacy) FindByID(ctx context.Context, tenant string, m month.Month, msgID int64) (message.Message, error) {
	t, err := l.cluster.tenant(tenant)
	if err != nil {
		return message.Message{}, err
	}
	r, err := legacydb.New(t.db).LegacyFindByID(ctx, msgID)
	if errors.Is(err, sql.ErrNoRows) {
		return message.Message{}, fmt.Errorf("legacy msg_id %d: %w", msgID, message.ErrNotFound)
	}
	if err != nil {
		return message.Message{}, fmt.Errorf("legacy msg_id %d: %w", msgID, gone(err))
	}
	if month.Of(r.ImGroupMessage.CreatedAt) != m {
		return message.Message{}, fmt.Errorf("legacy msg_id %d in %s: %w", msgID, m, message.ErrNotFound)
	}
	return legacyMessage(r.ImGroupMessage, r.ConversationID, m)
}

// Page reads the month's legacy rows of the topic the month table lacks, within the topic's
// legacy seq range of the month so the index scan never leaves the month.
func (l *Legacy) Page(ctx context.Context, tenant string, m month.Month, q message.PageQuery) ([]message.Message, error) {
	t, err := l.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return nil, nil
	}
	lo, hi, found, err := l.monthRange(ctx, tenant, t, m, q.Topic)
	if err != nil || !found {
		return nil, err
	}
	after, before := q.Bounds()
	after, before = max(after, lo-1), min(before, hi+1)
	if after+1 >= before {
		return nil, nil
	}
	db, err := l.monthOrTemplate(ctx, t, m)
	if err != nil {
		return nil, err
	}
	var includeDeleted int64
	if q.IncludeDeleted {
		includeDeleted = 1
	}
	limit := int32(min(q.Limit, math.MaxInt32))
	lq := legacydb.New(db)
	var rows []legacyRow
	if q.Desc {
		got, err := lq.LegacyPageDesc(ctx, legacydb.LegacyPageDescParams{
			Viewer: q.Viewer, Topic: q.Topic, After: after, Before: before, FromTime: m.Start(), ToTime: m.End(),
			IncludeDeleted: includeDeleted, Limit: limit,
		})
		if err != nil {
			return nil, fmt.Errorf("legacy page %s in %s: %w", q.Topic, m, gone(err))
		}
		for _, r := range got {
			rows = append(rows, legacyRow{r.ImGroupMessage, r.ConversationID})
		}
	} else {
		got, err := lq.LegacyPageAsc(ctx, legacydb.LegacyPageAscParams{
			Viewer: q.Viewer, Topic: q.Topic, After: after, Before: before, FromTime: m.Start(), ToTime: m.End(),
			IncludeDeleted: includeDeleted, Limit: limit,
		})
		if err != nil {
			return nil, fmt.Errorf("legacy page %s in %s: %w", q.Topic, m, gone(err))
		}
		for _, r := range got {
			rows = append(rows, legacyRow{r.ImGroupMessage, r.ConversationID})
		}
	}
	return legacyMessages(rows, m)
}

// Search reads the month's legacy rows the month table lacks, like MessageStore.Search.
func (l *Legacy) Search(ctx context.Context, tenant string, m month.Month, q ports.SearchQuery) ([]message.Message, error) {
	t, err := l.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return nil, nil
	}
	from, to := q.From.UTC(), q.To.UTC()
	if from.Before(m.Start()) {
		from = m.Start()
	}
	if to.After(m.End()) {
		to = m.End()
	}
	if !from.Before(to) {
		return nil, nil
	}
	db, err := l.monthOrTemplate(ctx, t, m)
	if err != nil {
		return nil, err
	}
	pattern := sql.NullString{String: "%" + likeEscaper.Replace(q.Text) + "%", Valid: true}
	limit := int32(min(q.Limit, math.MaxInt32))
	lq := legacydb.New(db)
	var rows []legacyRow
	if q.Topic != "" {
		got, err := lq.LegacySearchTopic(ctx, legacydb.LegacySearchTopicParams{
			Topic: q.Topic, FromTime: from, ToTime: to, Pattern: pattern, Limit: limit,
		})
		if err != nil {
			return nil, fmt.Errorf("legacy search of %s: %w", m, gone(err))
		}
		for _, r := range got {
			rows = append(rows, legacyRow{r.ImGroupMessage, r.ConversationID})
		}
	} else {
		got, err := lq.LegacySearch(ctx, legacydb.LegacySearchParams{FromTime: from, ToTime: to, Pattern: pattern, Limit: limit})
		if err != nil {
			return nil, fmt.Errorf("legacy search of %s: %w", m, gone(err))
		}
		for _, r := range got {
			rows = append(rows, legacyRow{r.ImGroupMessage, r.ConversationID})
		}
	}
	return legacyMessages(rows, m)
}

// monthRange is the topic's legacy seq range in month m; found=false when it has none there.
func (l *Legacy) monthRange(ctx context.Context, tenant string, t *tenantDB, m month.Month, topic string) (lo, hi int64, found bool, err error) {
	q := legacydb.New(t.db)
	cut, err := l.cutoverRecorded(ctx, tenant, q)
	if err != nil {
		return 0, 0, false, err
	}
	if cut {
		r, err := q.InventoryMonthRange(ctx, legacydb.InventoryMonthRangeParams{Topic: topic, ShardMonth: m.String()})
		if errors.Is(err, sql.ErrNoRows) {
			return 0, 0, false, nil
		}
		if err != nil {
			return 0, 0, false, fmt.Errorf("legacy inventory of %s in %s: %w", topic, m, err)
		}
		return r.MinSeq, r.MaxSeq, true, nil
	}
	r, err := q.LegacyLiveMonthRange(ctx, legacydb.LegacyLiveMonthRangeParams{Topic: topic, FromTime: m.Start(), ToTime: m.End()})
	if err != nil {
		return 0, 0, false, fmt.Errorf("legacy range of %s in %s: %w", topic, m, gone(err))
	}
	return r.MinSeq, r.MaxSeq, r.MaxSeq > 0, nil
}

// monthOrTemplate sends the queries' "not in the month table yet" test to m's table, or, for
// a month without a table, to the always empty template, where nothing is copied yet either.
func (l *Legacy) monthOrTemplate(ctx context.Context, t *tenantDB, m month.Month) (sqlcdb.DBTX, error) {
	db, err := t.months.on(ctx, t.db, m)
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, shard.ErrMonthMissing):
		return t.db, nil
	}
	return nil, err
}

// cutoverRecorded reports whether the tenant's cutover inventory exists.
func (l *Legacy) cutoverRecorded(ctx context.Context, tenant string, q *legacydb.Queries) (bool, error) {
	if _, ok := l.cutover.Load(tenant); ok {
		return true, nil
	}
	job, err := readJob(ctx, q)
	if err != nil {
		return false, err
	}
	if job.Phase == legacy.PhaseNone {
		return false, nil
	}
	l.cutover.Store(tenant, true)
	return true, nil
}

// legacyRow is a legacy row with the conversation id its topic maps to.
type legacyRow struct {
	row  legacydb.ImGroupMessage
	conv int64
}

func legacyMessages(rows []legacyRow, m month.Month) ([]message.Message, error) {
	out := make([]message.Message, 0, len(rows))
	for _, r := range rows {
		msg, err := legacyMessage(r.row, r.conv, m)
		if err != nil {
			return nil, err
		}
		out = append(out, msg)
	}
	return out, nil
}

// legacyMessage converts a legacy row exactly as its copy in month m would read.
func legacyMessage(r legacydb.ImGroupMessage, conv int64, m month.Month) (message.Message, error) {
	return fromRow(monthRow(r, conv), m)
}

// monthRow is the month-table row a legacy row is copied to: the same columns, the topic's
// conversation id, and no edited_at (the legacy table has none).
func monthRow(r legacydb.ImGroupMessage, conv int64) sqlcdb.ImGroupMessagesTpl {
	return sqlcdb.ImGroupMessagesTpl{
		MessageID: r.MessageID, Topic: r.Topic, GroupID: r.GroupID, ConversationID: conv, Seqid: r.Seqid,
		FromUser: r.FromUser, ClientMsgID: r.ClientMsgID, MsgType: r.MsgType, Status: r.Status,
		Content: r.Content, Head: r.Head, MentionedUserIds: r.MentionedUserIds, MentionAll: r.MentionAll,
		ReplySeqid: r.ReplySeqid, RootSeqid: r.RootSeqid, FileCount: r.FileCount, ContentSize: r.ContentSize,
		HasRisk: r.HasRisk, AuditStatus: r.AuditStatus, Version: r.Version, RecalledAt: r.RecalledAt,
		RecalledBy: r.RecalledBy, DeletedAt: r.DeletedAt, ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt,
	}
}

// readJob reads the migration job; Phase none when no cutover was recorded.
func readJob(ctx context.Context, q *legacydb.Queries) (legacy.Job, error) {
	r, err := q.MigrationJob(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return legacy.Job{Phase: legacy.PhaseNone}, nil
	}
	if err != nil {
		return legacy.Job{}, fmt.Errorf("read migration job: %w", err)
	}
	return jobOf(r)
}

// gone marks an error about the legacy table no longer existing as legacy.ErrGone.
func gone(err error) error {
	if isNoSuchTable(err, legacy.Table) {
		return fmt.Errorf("%w: %v", legacy.ErrGone, err)
	}
	return err
}

// tableExists asks information_schema whether the tenant database has the table.
func tableExists(ctx context.Context, db *sql.DB, name string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look up table %s: %w", name, err)
	}
	return n > 0, nil
}
