package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/adapters/mysql/legacydb"
	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// Migrations implements ports.MigrationStore: the job tables of sql/schema/0003_migration and
// the copy, verification and retirement of each tenant's legacy table (seed 000 §9).
type Migrations struct {
	cluster *Cluster
}

var _ ports.MigrationStore = (*Migrations)(nil)

// NewMigrations returns the migration store over the provisioned tenants of c.
func NewMigrations(c *Cluster) *Migrations { return &Migrations{cluster: c} }

// zeroCursorTime stores the zero cursor: DATETIME cannot hold Go's zero time, and no legacy
// row is older.
var zeroCursorTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// Plan reads the legacy table by month (full scans) and the catalog.
func (s *Migrations) Plan(ctx context.Context, tenant string) (legacy.Plan, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return legacy.Plan{}, err
	}
	job, err := readJob(ctx, legacydb.New(t.db))
	if err != nil {
		return legacy.Plan{}, err
	}
	p := legacy.Plan{Phase: job.Phase}
	if p.Present, err = tableExists(ctx, t.db, legacy.Table); err != nil || !p.Present {
		return p, err
	}
	q := legacydb.New(t.db)
	months, err := q.LegacyMonths(ctx)
	if err != nil {
		return legacy.Plan{}, fmt.Errorf("legacy months: %w", err)
	}
	if p.Topics, err = q.LegacyTopicCount(ctx); err != nil {
		return legacy.Plan{}, fmt.Errorf("legacy topics: %w", err)
	}
	if p.MaxMsgID, err = q.LegacyMaxMessageID(ctx); err != nil {
		return legacy.Plan{}, fmt.Errorf("legacy msg_ids: %w", err)
	}
	catalog, err := sqlcdb.New(t.db).Catalog(ctx)
	if err != nil {
		return legacy.Plan{}, fmt.Errorf("read catalog: %w", err)
	}
	states := make(map[string]string, len(catalog))
	for _, c := range catalog {
		states[c.ShardMonth] = c.Status
	}
	for _, r := range months {
		m := month.Month(r.ShardMonth)
		if !m.Valid() {
			return legacy.Plan{}, fmt.Errorf("legacy rows created in %d, outside the months imd stores: %w", r.ShardMonth, month.ErrInvalid)
		}
		p.Rows += r.RowCount
		p.Months = append(p.Months, legacy.MonthPlan{
			Month: m, Rows: r.RowCount, Topics: r.Topics, MinCreatedAt: r.MinCreatedAt.UTC(), MaxCreatedAt: r.MaxCreatedAt.UTC(),
			TableState: states[m.String()],
		})
	}
	if p.CursorIndex, err = hasCursorIndex(ctx, t.db); err != nil {
		return legacy.Plan{}, err
	}
	return p, nil
}

// Cutover records the watermark and the inventory in one transaction. The job row is inserted
// first, so a concurrent cutover waits on its key and then finds the recorded one.
func (s *Migrations) Cutover(ctx context.Context, tenant string) (legacy.Job, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return legacy.Job{}, err
	}
	if job, err := readJob(ctx, legacydb.New(t.db)); err != nil || job.Phase != legacy.PhaseNone {
		return job, err
	}
	present, err := tableExists(ctx, t.db, legacy.Table)
	if err != nil {
		return legacy.Job{}, err
	}
	if !present {
		return legacy.Job{}, legacy.ErrNoTable
	}
	err = inLegacyTx(ctx, t.db, nil, func(_ *sql.Tx, q *legacydb.Queries) error {
		if err := q.InsertMigrationJob(ctx); err != nil {
			return err
		}
		for _, step := range []struct {
			what string
			run  func(context.Context) error
		}{
			{"inventory", q.InsertInventory}, {"watermarks", q.InsertWatermarks},
			{"months", q.InsertMigrationMonths}, {"totals", q.SetMigrationTotals},
		} {
			if err := step.run(ctx); err != nil {
				return fmt.Errorf("record cutover %s: %w", step.what, err)
			}
		}
		months, err := q.MigrationMonths(ctx)
		if err != nil {
			return fmt.Errorf("read cutover months: %w", err)
		}
		for _, m := range months {
			if _, err := month.Parse(m.ShardMonth); err != nil {
				return fmt.Errorf("legacy rows created in %s, outside the months imd stores: %w", m.ShardMonth, err)
			}
		}
		return nil
	})
	if err != nil && !isDuplicate(err, "PRIMARY") {
		return legacy.Job{}, fmt.Errorf("cutover of %s: %w", tenant, err)
	}
	return readJob(ctx, legacydb.New(t.db))
}

// Job reads the job.
func (s *Migrations) Job(ctx context.Context, tenant string) (legacy.Job, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return legacy.Job{}, err
	}
	return readJob(ctx, legacydb.New(t.db))
}

// Progress reads the job, its months and the rate of its recent batches.
func (s *Migrations) Progress(ctx context.Context, tenant string) (legacy.Progress, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return legacy.Progress{}, err
	}
	q := legacydb.New(t.db)
	job, err := readJob(ctx, q)
	if err != nil || job.Phase == legacy.PhaseNone {
		return legacy.Progress{Job: job}, err
	}
	p := legacy.Progress{Job: job}
	months, err := q.MigrationMonths(ctx)
	if err != nil {
		return legacy.Progress{}, fmt.Errorf("read migration months: %w", err)
	}
	for _, r := range months {
		m, err := month.Parse(r.ShardMonth)
		if err != nil {
			return legacy.Progress{}, fmt.Errorf("migration month: %w", err)
		}
		p.Months = append(p.Months, legacy.MonthProgress{
			Month: m, Rows: r.LegacyRows, Topics: r.Topics, Copied: r.CopiedRows, Skipped: r.SkippedRows,
			Failed: r.FailedRows, Verified: legacy.VerifyState(r.VerifyStatus), VerifiedAt: r.VerifiedAt.Time.UTC(),
		})
	}
	if job.Phase == legacy.PhaseCopying {
		batches, err := q.RecentBatches(ctx, legacydb.RecentBatchesParams{Run: int32(job.Run), Limit: legacy.RateBatches})
		if err != nil {
			return legacy.Progress{}, fmt.Errorf("read recent batches: %w", err)
		}
		p.RowsPerSecond = rate(batches, time.Now())
	}
	return p, nil
}

// rate is the copy rate over the batches (newest first).
func rate(batches []legacydb.RecentBatchesRow, now time.Time) float64 {
	spans := make([]legacy.Span, len(batches))
	for i, b := range batches {
		spans[i] = legacy.Span{Rows: int64(b.RowsRead), Started: b.StartedAt, Finished: b.FinishedAt}
	}
	return legacy.Rate(spans, now)
}

// SetPhase compares and sets the phase.
func (s *Migrations) SetPhase(ctx context.Context, tenant string, c legacy.PhaseChange) (legacy.Job, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return legacy.Job{}, err
	}
	var report sql.NullString
	if c.Report != nil {
		raw, err := json.Marshal(c.Report)
		if err != nil {
			return legacy.Job{}, fmt.Errorf("encode report: %w", err)
		}
		report = sql.NullString{String: string(raw), Valid: true}
	}
	q := legacydb.New(t.db)
	n, err := q.SetMigrationPhase(ctx, legacydb.SetMigrationPhaseParams{
		ToPhase: string(c.To), Error: sql.NullString{String: c.Error, Valid: c.Error != ""}, Report: report,
		FromPhases: phaseNames(c.From),
	})
	if err != nil {
		return legacy.Job{}, fmt.Errorf("set migration phase %s: %w", c.To, err)
	}
	job, err := readJob(ctx, q)
	if err != nil {
		return legacy.Job{}, err
	}
	// No row changed: either the phase was another, or it is already the target (MySQL counts
	// changed rows only).
	if n == 0 && !(job.Phase == c.To && slices.Contains(c.From, c.To)) {
		return job, legacy.PhaseChangedError(job.Phase, c.From)
	}
	return job, nil
}

// Rerun restarts the copy from the first row.
func (s *Migrations) Rerun(ctx context.Context, tenant string, from []legacy.Phase) (legacy.Job, error) {
	return s.restart(ctx, tenant, from, func(q *legacydb.Queries) (int64, error) {
		n, err := q.RerunMigration(ctx, phaseNames(from))
		if err != nil || n == 0 {
			return n, err
		}
		return n, q.ResetMonthProgress(ctx)
	})
}

// Reverify clears the verification and resumes: verifying after a complete copy, else copying.
func (s *Migrations) Reverify(ctx context.Context, tenant string, from []legacy.Phase) (legacy.Job, error) {
	return s.restart(ctx, tenant, from, func(q *legacydb.Queries) (int64, error) {
		return q.ReverifyMigration(ctx, phaseNames(from))
	})
}

// restart runs change and clears every month's verification in one transaction.
func (s *Migrations) restart(ctx context.Context, tenant string, from []legacy.Phase, change func(*legacydb.Queries) (int64, error)) (legacy.Job, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return legacy.Job{}, err
	}
	errRefused := errors.New("refused")
	err = inLegacyTx(ctx, t.db, nil, func(_ *sql.Tx, q *legacydb.Queries) error {
		n, err := change(q)
		switch {
		case err != nil:
			return err
		case n == 0:
			return errRefused
		}
		if err := q.ResetMonthVerification(ctx); err != nil {
			return err
		}
		return q.ResetSegmentVerification(ctx)
	})
	job, jerr := readJob(ctx, legacydb.New(t.db))
	switch {
	case errors.Is(err, errRefused):
		return job, legacy.PhaseChangedError(job.Phase, from)
	case err != nil:
		return legacy.Job{}, fmt.Errorf("restart migration of %s: %w", tenant, err)
	}
	return job, jerr
}

// MarkPrepared records that the work after the cutover is done.
func (s *Migrations) MarkPrepared(ctx context.Context, tenant string) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := legacydb.New(t.db).MarkMigrationPrepared(ctx); err != nil {
		return fmt.Errorf("mark migration prepared: %w", err)
	}
	return nil
}

// cursorIndex is the index the job adds when the legacy table has none to page by.
const cursorIndex = "idx_migration_cursor"

// PrepareTable adds (created_at, message_id) to the legacy table unless an index already
// starts with created_at and continues with message_id or nothing (InnoDB appends the primary
// key). Online DDL: the table stays readable.
func (s *Migrations) PrepareTable(ctx context.Context, tenant string) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	ok, err := hasCursorIndex(ctx, t.db)
	if err != nil || ok {
		return err
	}
	// Identifiers are constants; nothing here comes from a request.
	ddl := "ALTER TABLE `" + legacy.Table + "` ADD INDEX `" + cursorIndex + "` (created_at, message_id), ALGORITHM=INPLACE, LOCK=NONE"
	if _, err := t.db.ExecContext(ctx, ddl); err != nil && !isDuplicateKeyName(err) {
		return fmt.Errorf("add copy cursor index to %s: %w", legacy.Table, err)
	}
	return nil
}

// isDuplicateKeyName is ER_DUP_KEYNAME: another node added the index meanwhile.
func isDuplicateKeyName(err error) bool { return mysqlErrno(err) == 1061 }

func hasCursorIndex(ctx context.Context, db *sql.DB) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `
SELECT COUNT(*) FROM information_schema.STATISTICS AS a
WHERE a.TABLE_SCHEMA = DATABASE() AND a.TABLE_NAME = ? AND a.SEQ_IN_INDEX = 1 AND a.COLUMN_NAME = 'created_at'
    AND NOT EXISTS (
        SELECT 1 FROM information_schema.STATISTICS AS b
        WHERE b.TABLE_SCHEMA = a.TABLE_SCHEMA AND b.TABLE_NAME = a.TABLE_NAME AND b.INDEX_NAME = a.INDEX_NAME
            AND b.SEQ_IN_INDEX = 2 AND b.COLUMN_NAME <> 'message_id')`, legacy.Table).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look up the copy cursor index: %w", err)
	}
	return n > 0, nil
}

// Watermarks pages the topics' cutover seqs.
func (s *Migrations) Watermarks(ctx context.Context, tenant, after string, limit int) ([]legacy.TopicSeq, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := legacydb.New(t.db).Watermarks(ctx, legacydb.WatermarksParams{Topic: after, Limit: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("read watermarks: %w", err)
	}
	out := make([]legacy.TopicSeq, len(rows))
	for i, r := range rows {
		out[i] = legacy.TopicSeq{Topic: r.Topic, Seq: r.CutoverSeq}
	}
	return out, nil
}

// MonthTopics is the cutover inventory of month m.
func (s *Migrations) MonthTopics(ctx context.Context, tenant string, m month.Month) ([]legacy.TopicMonth, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := legacydb.New(t.db).MonthInventory(ctx, m.String())
	if err != nil {
		return nil, fmt.Errorf("inventory of %s: %w", m, err)
	}
	out := make([]legacy.TopicMonth, len(rows))
	for i, r := range rows {
		out[i] = legacy.TopicMonth{Topic: r.Topic, Month: m, MinSeq: r.MinSeq, MaxSeq: r.MaxSeq, Rows: r.RowCount, CutoverSeq: r.CutoverSeq}
	}
	return out, nil
}

// Finish renames the legacy table; it never drops it.
func (s *Migrations) Finish(ctx context.Context, tenant string) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	present, err := tableExists(ctx, t.db, legacy.Table)
	if err != nil {
		return err
	}
	retired, err := tableExists(ctx, t.db, legacy.RetiredTable)
	if err != nil {
		return err
	}
	switch {
	case !present && retired:
		return nil
	case !present:
		return legacy.ErrNoTable
	case retired:
		return fmt.Errorf("both %s and %s exist: rename one by hand", legacy.Table, legacy.RetiredTable)
	}
	// Identifiers are constants; nothing here comes from a request.
	if _, err := t.db.ExecContext(ctx, "RENAME TABLE `"+legacy.Table+"` TO `"+legacy.RetiredTable+"`"); err != nil {
		return fmt.Errorf("retire %s: %w", legacy.Table, err)
	}
	return nil
}

// Lease takes a named server lock for the tenant's database on a connection of its own; the
// server frees it when that connection ends, so a killed runner loses its lease at once.
func (s *Migrations) Lease(ctx context.Context, tenant string) (func(), bool, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, false, err
	}
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("migration lease: %w", err)
	}
	// Lock names are server-wide: the database's hash keeps tenants apart within 64 characters.
	const name = "CONCAT('imd_migration_', MD5(DATABASE()))"
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+name+", 0)").Scan(&got); err != nil {
		conn.Close()
		return nil, false, fmt.Errorf("migration lease: %w", err)
	}
	if got.Int64 != 1 {
		conn.Close()
		return nil, false, nil
	}
	release := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(ctx, "DO RELEASE_LOCK("+name+")"); err != nil {
			// Discard the connection: the lock goes with its session.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}
	return release, true, nil
}

// jobOf converts the job row.
func jobOf(r legacydb.ImMigrationJob) (legacy.Job, error) {
	j := legacy.Job{
		Phase: legacy.Phase(r.Phase), CutoverAt: r.CutoverTime.UTC(), Prepared: r.Prepared, CopyDone: r.CopyDone,
		Run: int(r.Run), Rows: r.LegacyRows, Topics: r.Topics, Copied: r.CopiedRows, Skipped: r.SkippedRows,
		Failed: r.FailedRows, Batches: r.Batches, Error: r.Error.String, UpdatedAt: r.UpdatedAt.UTC(),
	}
	if r.CursorMessageID != 0 {
		j.Cursor = legacy.Cursor{CreatedAt: r.CursorCreatedAt.UTC(), MsgID: r.CursorMessageID}
	}
	if r.Report.Valid {
		j.Report = &legacy.Report{}
		if err := json.Unmarshal([]byte(r.Report.String), j.Report); err != nil {
			return legacy.Job{}, fmt.Errorf("decode migration report: %w", err)
		}
	}
	return j, nil
}

func phaseNames(ps []legacy.Phase) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// inLegacyTx runs fn in a transaction of db; opts nil takes the server's default isolation.
func inLegacyTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx, *legacydb.Queries) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx, legacydb.New(tx)); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
