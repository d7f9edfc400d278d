package memory

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/ports"
)

// Legacy is the in-memory legacy table of each tenant with its migration job:
// ports.LegacyMessages and ports.MigrationStore over the month tables and route mirror of a
// ShardStore, as the MySQL adapter works over one database.
type Legacy struct {
	shards *ShardStore
	clock  func() time.Time

	// mu guards tenants; it is taken before shards.mu when both are needed.
	mu      sync.Mutex
	tenants map[string]*legacyTable
}

var (
	_ ports.LegacyMessages = (*Legacy)(nil)
	_ ports.MigrationStore = (*Legacy)(nil)
)

// legacyTable is one tenant's legacy table and job.
type legacyTable struct {
	present, retired bool
	cursorIndex      bool
	rows             map[int64]message.Message // by msg_id; Month is the month of CreatedAt
	job              *legacy.Job               // nil until the cutover
	inventory        legacy.Inventory
	watermarks       map[string]int64
	months           map[month.Month]*legacy.MonthProgress
	batches          []legacyBatch // newest last
	leased           bool
}

type legacyBatch struct {
	run  int
	span legacy.Span
}

// NewLegacy returns tenants without legacy tables over the month tables of shards.
func NewLegacy(shards *ShardStore, clock func() time.Time) *Legacy {
	return &Legacy{shards: shards, clock: clock, tenants: make(map[string]*legacyTable)}
}

// Load creates the tenant's legacy table if needed and adds msgs to it, as an operator's
// database would hold them.
func (l *Legacy) Load(tenant string, msgs []message.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	t.present = true
	for _, m := range msgs {
		m = cloneMessage(m)
		m.CreatedAt = m.CreatedAt.UTC().Truncate(time.Millisecond)
		m.Month = month.Of(m.CreatedAt)
		t.rows[m.MsgID] = m
	}
}

// Remove deletes a legacy row, as something writing the table after the cutover would.
func (l *Legacy) Remove(tenant, topicName string, sq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	for id, m := range t.rows {
		if m.Topic == topicName && m.Seq == sq {
			delete(t.rows, id)
		}
	}
}

func (l *Legacy) table(tenant string) *legacyTable {
	return stateOf(l.tenants, tenant, func() *legacyTable { return &legacyTable{rows: make(map[int64]message.Message)} })
}

// Status reports the table and the job's phase.
func (l *Legacy) Status(_ context.Context, tenant string) (legacy.Status, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	return legacy.Status{Present: t.present, Phase: t.jobOrNone().Phase}, nil
}

// onVisible runs f on the tenant's table under l.mu, or fails with legacy.ErrGone once the
// table was retired.
func onVisible[T any](l *Legacy, tenant string, f func(*legacyTable) (T, error)) (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	if !t.present {
		var zero T
		return zero, legacy.ErrGone
	}
	return f(t)
}

// MaxSeq is the topic's highest legacy seq.
func (l *Legacy) MaxSeq(_ context.Context, tenant, topicName string) (int64, error) {
	return onVisible(l, tenant, func(t *legacyTable) (int64, error) { return t.segments().Route(topicName).MaxSeq(), nil })
}

// Segments are the topic's legacy months, from the inventory once the cutover is recorded.
func (l *Legacy) Segments(_ context.Context, tenant, topicName string) (route.Route, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	if t.job != nil {
		return t.inventory.Route(topicName), nil
	}
	if !t.present {
		return nil, legacy.ErrGone
	}
	return t.segments().Route(topicName), nil
}

// segments groups the rows by topic and month of created_at.
func (t *legacyTable) segments() legacy.Inventory {
	inv := make(legacy.Inventory)
	for _, m := range t.rows {
		inv.Add(m)
	}
	return inv
}

// Get reads the legacy row (topic, seq) if it was created in m.
func (l *Legacy) Get(_ context.Context, tenant string, m month.Month, topicName string, sq int64) (message.Message, error) {
	return onVisible(l, tenant, func(t *legacyTable) (message.Message, error) {
		for _, row := range t.rows {
			if row.Topic == topicName && row.Seq == sq && row.Month == m {
				return cloneMessage(row), nil
			}
		}
		return message.Message{}, fmt.Errorf("legacy get %s seq %d in %s: %w", topicName, sq, m, message.ErrNotFound)
	})
}

// FindByID reads the legacy row with msgID if it was created in m.
func (l *Legacy) FindByID(_ context.Context, tenant string, m month.Month, msgID int64) (message.Message, error) {
	return onVisible(l, tenant, func(t *legacyTable) (message.Message, error) {
		if row, ok := t.rows[msgID]; ok && row.Month == m {
			return cloneMessage(row), nil
		}
		return message.Message{}, fmt.Errorf("legacy msg_id %d in %s: %w", msgID, m, message.ErrNotFound)
	})
}

// Page reads the month's legacy rows of the topic its month table lacks.
func (l *Legacy) Page(_ context.Context, tenant string, m month.Month, q message.PageQuery) ([]message.Message, error) {
	return l.uncopied(tenant, m, func(d *tenantMessages, rows iter.Seq[message.Message], keep func(message.Message) bool) []message.Message {
		return page(d, rows, q, keep)
	})
}

// Search reads the month's legacy rows its month table lacks, like MessageStore.Search.
func (l *Legacy) Search(_ context.Context, tenant string, m month.Month, q ports.SearchQuery) ([]message.Message, error) {
	return l.uncopied(tenant, m, func(_ *tenantMessages, rows iter.Seq[message.Message], keep func(message.Message) bool) []message.Message {
		return search(rows, q, keep)
	})
}

// uncopied runs read over the legacy rows with keep passing those of month m whose month table
// lacks their (topic, seq), under both locks.
func (l *Legacy) uncopied(tenant string, m month.Month, read func(*tenantMessages, iter.Seq[message.Message], func(message.Message) bool) []message.Message) ([]message.Message, error) {
	return onVisible(l, tenant, func(t *legacyTable) ([]message.Message, error) {
		l.shards.mu.Lock()
		defer l.shards.mu.Unlock()
		d := l.shards.db(tenant)
		return read(d, maps.Values(t.rows), func(row message.Message) bool {
			_, copied := d.tables[row.Month][topicSeqKey{row.Topic, row.Seq}]
			return row.Month == m && !copied
		}), nil
	})
}

// Plan reads the legacy table by month.
func (l *Legacy) Plan(_ context.Context, tenant string) (legacy.Plan, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	p := legacy.Plan{Present: t.present, Phase: t.jobOrNone().Phase, CursorIndex: t.cursorIndex}
	if !t.present {
		return p, nil
	}
	byMonth := make(map[month.Month]*legacy.MonthPlan)
	for _, row := range t.rows {
		if byMonth[row.Month] == nil {
			byMonth[row.Month] = &legacy.MonthPlan{Month: row.Month}
		}
		byMonth[row.Month].Add(row.CreatedAt)
		p.MaxMsgID = max(p.MaxMsgID, row.MsgID)
	}
	inv := t.segments()
	l.shards.mu.Lock()
	defer l.shards.mu.Unlock()
	catalog := l.shards.db(tenant).catalog
	for _, mp := range inv.Months() {
		plan := byMonth[mp.Month]
		plan.Topics = mp.Topics
		if e, ok := catalog[mp.Month]; ok {
			plan.TableState = string(e.state)
		}
		p.Rows += plan.Rows
		p.Months = append(p.Months, *plan)
	}
	p.Topics = int64(len(inv))
	return p, nil
}

// Cutover records the watermark and inventory once.
func (l *Legacy) Cutover(_ context.Context, tenant string) (legacy.Job, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	if t.job != nil {
		return *t.job, nil
	}
	if !t.present {
		return legacy.Job{}, legacy.ErrNoTable
	}
	t.inventory = t.segments()
	t.watermarks = t.inventory.Watermarks()
	t.months = make(map[month.Month]*legacy.MonthProgress)
	job := legacy.Job{Phase: legacy.PhaseCopying, CutoverAt: l.clock().UTC().Truncate(time.Millisecond), Run: 1, Topics: int64(len(t.inventory))}
	for _, mp := range t.inventory.Months() {
		t.months[mp.Month] = &mp
		job.Rows += mp.Rows
	}
	t.job = &job
	return job, nil
}

// Job reads the job.
func (l *Legacy) Job(_ context.Context, tenant string) (legacy.Job, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.table(tenant).jobOrNone(), nil
}

// Progress reads the job, its months and its recent copy rate.
func (l *Legacy) Progress(_ context.Context, tenant string) (legacy.Progress, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	if t.job == nil {
		return legacy.Progress{Job: legacy.Job{Phase: legacy.PhaseNone}}, nil
	}
	p := legacy.Progress{Job: *t.job}
	for _, m := range slices.Sorted(maps.Keys(t.months)) {
		p.Months = append(p.Months, *t.months[m])
	}
	if t.job.Phase == legacy.PhaseCopying {
		var recent []legacy.Span
		for i := len(t.batches) - 1; i >= 0 && len(recent) < legacy.RateBatches; i-- {
			if t.batches[i].run == t.job.Run {
				recent = append(recent, t.batches[i].span)
			}
		}
		p.RowsPerSecond = legacy.Rate(recent, l.clock())
	}
	return p, nil
}

// SetPhase compares and sets the phase.
func (l *Legacy) SetPhase(_ context.Context, tenant string, c legacy.PhaseChange) (legacy.Job, error) {
	return l.change(tenant, c.From, func(t *legacyTable) {
		t.job.Phase, t.job.Error, t.job.UpdatedAt = c.To, c.Error, l.clock().UTC()
		if c.Report != nil {
			rep := *c.Report
			t.job.Report = &rep
		}
	})
}

// change runs do on the job if its phase is one of from, as one compare-and-set.
func (l *Legacy) change(tenant string, from []legacy.Phase, do func(*legacyTable)) (legacy.Job, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	if t.job == nil || !slices.Contains(from, t.job.Phase) {
		return t.jobOrNone(), legacy.PhaseChangedError(t.jobOrNone().Phase, from)
	}
	do(t)
	return *t.job, nil
}

func (t *legacyTable) jobOrNone() legacy.Job {
	if t.job == nil {
		return legacy.Job{Phase: legacy.PhaseNone}
	}
	return *t.job
}

// Rerun restarts the copy from the first row.
func (l *Legacy) Rerun(_ context.Context, tenant string, from []legacy.Phase) (legacy.Job, error) {
	return l.change(tenant, from, func(t *legacyTable) {
		t.job.Restart()
		for _, mp := range t.months {
			mp.Restart()
		}
	})
}

// Reverify clears the verification and resumes.
func (l *Legacy) Reverify(_ context.Context, tenant string, from []legacy.Phase) (legacy.Job, error) {
	return l.change(tenant, from, func(t *legacyTable) {
		t.job.Phase, t.job.Error = t.job.Resume(), ""
		for _, mp := range t.months {
			mp.Unverify()
		}
	})
}

// MarkPrepared records that the work after the cutover was done.
func (l *Legacy) MarkPrepared(_ context.Context, tenant string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.table(tenant); t.job != nil {
		t.job.Prepared = true
	}
	return nil
}

// PrepareTable adds the copy cursor index.
func (l *Legacy) PrepareTable(_ context.Context, tenant string) error {
	_, err := onVisible(l, tenant, func(t *legacyTable) (struct{}, error) {
		t.cursorIndex = true
		return struct{}{}, nil
	})
	return err
}

// Watermarks pages the topics' cutover seqs.
func (l *Legacy) Watermarks(_ context.Context, tenant, after string, limit int) ([]legacy.TopicSeq, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	var out []legacy.TopicSeq
	for _, topicName := range slices.Sorted(maps.Keys(t.watermarks)) {
		if topicName > after && len(out) < limit {
			out = append(out, legacy.TopicSeq{Topic: topicName, Seq: t.watermarks[topicName]})
		}
	}
	return out, nil
}

// CopyBatch copies the rows after the cursor, all at once.
func (l *Legacy) CopyBatch(_ context.Context, tenant string, limit int) (legacy.Batch, error) {
	started := l.clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	if t.job == nil || t.job.Phase != legacy.PhaseCopying {
		return legacy.Batch{}, fmt.Errorf("%w: the migration is not copying", legacy.ErrPhaseChanged)
	}
	if !t.present {
		return legacy.Batch{}, legacy.ErrGone
	}
	var next []message.Message
	for _, row := range t.rows {
		if t.job.Cursor.Before(legacy.CursorOf(row)) {
			next = append(next, row)
		}
	}
	slices.SortFunc(next, func(a, b message.Message) int { return legacy.CursorOf(a).Compare(legacy.CursorOf(b)) })
	next = next[:min(len(next), limit)]
	b := legacy.Batch{Start: t.job.Cursor, End: t.job.Cursor, Rows: len(next)}
	if len(next) == 0 {
		t.job.CopyDone = true
		return b, nil
	}
	l.shards.mu.Lock()
	defer l.shards.mu.Unlock()
	d := l.shards.db(tenant)
	for _, row := range next {
		if err := d.copyTarget(row); err != nil {
			return legacy.Batch{}, err
		}
	}
	for _, row := range next {
		o := copyRow(d, row)
		b.Count(o, legacy.TopicSeq{Topic: row.Topic, Seq: row.Seq})
		t.months[row.Month].Count(o)
	}
	b.End = legacy.CursorOf(next[len(next)-1])
	t.job.Record(b)
	finished := l.clock()
	t.batches = append(t.batches, legacyBatch{run: t.job.Run, span: legacy.Span{Rows: int64(b.Rows), Started: started, Finished: finished}})
	b.Took = finished.Sub(started)
	return b, nil
}

// copyTarget fails unless the row's month table exists; the caller holds shards.mu.
func (d *tenantMessages) copyTarget(row message.Message) error {
	if _, ok := d.catalog[row.Month]; !ok {
		return fmt.Errorf("copy into %s: month table missing", row.Month)
	}
	return nil
}

// copyRow is the INSERT IGNORE of one legacy row into its month table with the writer's mirror
// upsert; the caller holds shards.mu and has checked the month is in the catalog.
func copyRow(d *tenantMessages, row message.Message) legacy.Outcome {
	table := d.tables[row.Month]
	for k, m := range table {
		switch {
		case m.MsgID == row.MsgID:
			return legacy.Skipped
		case k.topic == row.Topic && (k.seq == row.Seq || row.ClientMsgID != "" && m.From == row.From && m.ClientMsgID == row.ClientMsgID):
			return legacy.Failed
		}
	}
	table[topicSeqKey{row.Topic, row.Seq}] = cloneMessage(row)
	d.mirror.Grow(row.Topic, row.Month, row.Seq, row.CreatedAt)
	return legacy.Copied
}

// CopyMessage copies one legacy row ahead of the backfill.
func (l *Legacy) CopyMessage(_ context.Context, tenant, topicName string, sq int64) (bool, error) {
	return onVisible(l, tenant, func(t *legacyTable) (bool, error) {
		l.shards.mu.Lock()
		defer l.shards.mu.Unlock()
		d := l.shards.db(tenant)
		for _, row := range t.rows {
			if row.Topic != topicName || row.Seq != sq {
				continue
			}
			if err := d.copyTarget(row); err != nil {
				return false, err
			}
			if copyRow(d, row) == legacy.Failed {
				return true, fmt.Errorf("copy %s seq %d: %w", topicName, sq, seq.ErrTaken)
			}
			return true, nil
		}
		return false, nil
	})
}

// MonthTopics is the inventory of month m.
func (l *Legacy) MonthTopics(_ context.Context, tenant string, m month.Month) ([]legacy.TopicMonth, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	return t.inventory.Topics(m, t.watermarks), nil
}

// LegacyRows streams the legacy rows created in m.
func (l *Legacy) LegacyRows(_ context.Context, tenant string, m month.Month) iter.Seq2[legacy.Row, error] {
	l.mu.Lock()
	t := l.table(tenant)
	var rows []legacy.Row
	for _, row := range t.rows {
		if row.Month == m {
			rows = append(rows, legacy.RowOf(row))
		}
	}
	present := t.present
	l.mu.Unlock()
	return streamOf(rows, present)
}

// MonthRows streams m's month-table rows at or below their topic's watermark.
func (l *Legacy) MonthRows(_ context.Context, tenant string, m month.Month) iter.Seq2[legacy.Row, error] {
	l.mu.Lock()
	watermarks := maps.Clone(l.table(tenant).watermarks)
	l.mu.Unlock()
	l.shards.mu.Lock()
	var rows []legacy.Row
	for k, row := range l.shards.db(tenant).tables[m] {
		if w, ok := watermarks[k.topic]; ok && k.seq <= w {
			rows = append(rows, legacy.RowOf(row))
		}
	}
	l.shards.mu.Unlock()
	return streamOf(rows, true)
}

// streamOf streams rows in the order both tables are compared in, or legacy.ErrGone.
func streamOf(rows []legacy.Row, present bool) iter.Seq2[legacy.Row, error] {
	slices.SortFunc(rows, legacy.CompareRows)
	return func(yield func(legacy.Row, error) bool) {
		if !present {
			yield(legacy.Row{}, legacy.ErrGone)
			return
		}
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// RecordVerification stores the month's outcome.
func (l *Legacy) RecordVerification(_ context.Context, tenant string, m month.Month, state legacy.VerifyState, _ []legacy.TopicResult) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if mp, ok := l.table(tenant).months[m]; ok {
		mp.Verified, mp.VerifiedAt = state, l.clock().UTC()
	}
	return nil
}

// Finish retires the legacy table.
func (l *Legacy) Finish(_ context.Context, tenant string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	switch {
	case !t.present && t.retired:
		return nil
	case !t.present:
		return legacy.ErrNoTable
	}
	t.present, t.retired = false, true
	return nil
}

// Lease lets one runner at a time have the tenant.
func (l *Legacy) Lease(_ context.Context, tenant string) (func(), bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.table(tenant)
	if t.leased {
		return nil, false, nil
	}
	t.leased = true
	return func() {
		l.mu.Lock()
		t.leased = false
		l.mu.Unlock()
	}, true, nil
}

// Leased reports whether a runner holds the tenant's lease: tests wait for it to drop, the
// event of a runner that has stopped.
func (l *Legacy) Leased(tenant string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.table(tenant).leased
}
