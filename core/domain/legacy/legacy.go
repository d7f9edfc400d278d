// Package legacy holds the values of the migration from the legacy single table
// im_group_messages into the month tables (seed 000 §9): the job's phases and cursor, the
// cutover watermark, copy batches, and what verification compares and reports. The logic lives
// in core/loop/migration (the job) and core/store/dualread (reads during the migration).
package legacy

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
)

// Table names. The legacy table is never created by the tenant migrations: it comes from an
// operator's existing database (or the test data generator). Finish renames it, never drops it.
const (
	Table        = "im_group_messages"
	RetiredTable = "im_group_messages_legacy"
)

// ErrGone: the legacy table disappeared under a read (finish renamed it). Every row was copied
// and verified before that, so the caller answers from the month tables alone.
var ErrGone = errors.New("legacy table gone")

// Phase is where a tenant's migration stands.
type Phase string

const (
	// PhaseNone: no cutover recorded; the legacy table may still be written by the old system.
	PhaseNone Phase = "none"
	// PhaseCopying: the cutover is recorded and the backfill copies batches.
	PhaseCopying Phase = "copying"
	// PhasePaused: an operator paused the copy; resume continues at the cursor.
	PhasePaused Phase = "paused"
	// PhaseVerifying: every row was copied; the months are being compared.
	PhaseVerifying Phase = "verifying"
	// PhaseVerified: every month compared equal; finish may retire the legacy table.
	PhaseVerified Phase = "verified"
	// PhaseFailed: a mismatch (see Job.Report) or an error (Job.Error) stopped the job.
	PhaseFailed Phase = "failed"
	// PhaseFinished: reads no longer use the legacy table, which is renamed RetiredTable.
	PhaseFinished Phase = "finished"
)

// Phases lists every phase, for a gauge that shows the current one as 1 and the rest as 0.
var Phases = []Phase{PhaseNone, PhaseCopying, PhasePaused, PhaseVerifying, PhaseVerified, PhaseFailed, PhaseFinished}

// Running reports whether a runner has work in this phase.
func (p Phase) Running() bool { return p == PhaseCopying || p == PhaseVerifying }

// Status is what dual read needs to know about a tenant.
type Status struct {
	// Present: the legacy table exists under its original name.
	Present bool
	Phase   Phase
}

// DualRead reports whether reads must merge the legacy table into the month tables.
func (s Status) DualRead() bool { return s.Present && s.Phase != PhaseFinished }

// Cursor is a position in the legacy table in copy order, (created_at, message_id): every row
// at or before it was handled by a committed batch. The zero cursor is before the first row.
type Cursor struct {
	CreatedAt time.Time `json:"created_at"`
	MsgID     int64     `json:"message_id"`
}

// IsZero reports whether the cursor is before the first row.
func (c Cursor) IsZero() bool { return c.CreatedAt.IsZero() && c.MsgID == 0 }

// Before reports whether c comes before o in copy order.
func (c Cursor) Before(o Cursor) bool {
	if !c.CreatedAt.Equal(o.CreatedAt) {
		return c.CreatedAt.Before(o.CreatedAt)
	}
	return c.MsgID < o.MsgID
}

// MonthPlan is one month of created_at in the legacy table.
type MonthPlan struct {
	Month        month.Month
	Rows         int64
	Topics       int64
	MinCreatedAt time.Time
	MaxCreatedAt time.Time
	// TableState is the catalog state of the month's table, "" when it has none yet.
	TableState string
}

// Plan is what a migration would do, read without writing anything.
type Plan struct {
	Present bool
	Phase   Phase
	Rows    int64
	Topics  int64
	Months  []MonthPlan
	// CursorIndex reports whether the legacy table has an index on (created_at, message_id);
	// the job adds one before copying, since the cursor pages by it.
	CursorIndex bool
	// MaxMsgID is the legacy table's largest msg_id.
	MaxMsgID int64
	// Warnings name what would go wrong, for the operator to settle before starting.
	Warnings []string
}

// Job is the persisted state of a tenant's migration.
type Job struct {
	Phase     Phase
	CutoverAt time.Time
	// Prepared: after the cutover the month tables were ensured, the seq counters raised to the
	// watermark and the routes rebuilt.
	Prepared bool
	Cursor   Cursor
	CopyDone bool
	// Run counts the copies: 1, plus one per rerun from the start.
	Run int
	// Rows and Topics are the legacy table's at the cutover.
	Rows, Topics            int64
	Copied, Skipped, Failed int64 // of the current run
	Batches                 int64
	Error                   string  // why the job failed, for the operator
	Report                  *Report // the last verification report
	UpdatedAt               time.Time
}

// Remaining is the number of legacy rows the current run has not handled yet.
func (j Job) Remaining() int64 { return max(j.Rows-j.Copied-j.Skipped-j.Failed, 0) }

// VerifyState is the verification outcome of a month.
type VerifyState string

const (
	Unverified VerifyState = ""
	VerifiedOK VerifyState = "ok"
	Mismatched VerifyState = "mismatch"
)

// MonthProgress is one month of the current run.
type MonthProgress struct {
	Month                   month.Month
	Rows, Topics            int64 // legacy rows and topics of the month at the cutover
	Copied, Skipped, Failed int64
	Verified                VerifyState
	VerifiedAt              time.Time
}

// Done is how many of the month's rows the current run handled.
func (m MonthProgress) Done() int64 { return m.Copied + m.Skipped + m.Failed }

// Progress is a job with its months and its recent speed.
type Progress struct {
	Job    Job
	Months []MonthProgress
	// RowsPerSecond is the copy rate over the recent batches, 0 when not copying.
	RowsPerSecond float64
	// Verifying is the month the answering node is comparing right now, nil when it compares
	// none (verification runs on the node holding the job's lease).
	Verifying *VerifyProgress
}

// VerifyProgress is how far the comparison of one month has got.
type VerifyProgress struct {
	Month month.Month
	Rows  int64 // legacy rows of the month compared so far
}

// ETA is the time the rest of the copy needs at the recent rate; 0 when unknown or done.
func (p Progress) ETA() time.Duration {
	left := p.Job.Remaining()
	if left == 0 || p.RowsPerSecond <= 0 {
		return 0
	}
	return time.Duration(float64(left) / p.RowsPerSecond * float64(time.Second))
}

// TopicSeq names one message.
type TopicSeq struct {
	Topic string `json:"topic"`
	Seq   int64  `json:"seq"`
}

// MaxFailedKeys bounds the rows a batch names when it could not copy them.
const MaxFailedKeys = 20

// Batch is what one copy transaction did.
type Batch struct {
	Start, End              Cursor
	Rows                    int // read from the legacy table; 0: the copy is complete
	Copied, Skipped, Failed int
	// FailedKeys are the first rows whose (topic, seq) or client_msg_id another message of the
	// month table already holds; verification reports them too.
	FailedKeys []TopicSeq
	Took       time.Duration
}

// TopicMonth is one topic's part of one month in the cutover inventory.
type TopicMonth struct {
	Topic          string
	Month          month.Month
	MinSeq, MaxSeq int64
	Rows           int64
	// CutoverSeq is the topic's watermark: its highest legacy seq at the cutover.
	CutoverSeq int64
}

// Row is what verification compares of one message, from either table.
type Row struct {
	Topic   string
	Seq     int64
	MsgID   int64
	Status  string
	Content []byte // nil for SQL NULL
	Version int
}

// MismatchKind tells how a topic's rows differ.
type MismatchKind string

const (
	// Missing: a legacy row is not in the month table.
	Missing MismatchKind = "missing"
	// Extra: the month table holds a seq at or below the watermark the legacy month lacks.
	Extra MismatchKind = "extra"
	// Differs: both hold the seq with another msg_id, status or content, and the month row is
	// not a later version written through imd.
	Differs MismatchKind = "differs"
	// LegacyChanged: the legacy rows of the month differ in number from the cutover inventory,
	// i.e. something wrote the legacy table after the cutover.
	LegacyChanged MismatchKind = "legacy_changed"
)

// Mismatch is a run of seqs of one topic and month that differ the same way.
type Mismatch struct {
	Topic   string       `json:"topic"`
	Month   month.Month  `json:"month"`
	Kind    MismatchKind `json:"kind"`
	FromSeq int64        `json:"from_seq"`
	ToSeq   int64        `json:"to_seq"`
	Rows    int64        `json:"rows"`
}

// TopicResult is the comparison of one topic in one month.
type TopicResult struct {
	Topic                      string
	Month                      month.Month
	LegacyRows, MonthRows      int64
	LegacyMinSeq, LegacyMaxSeq int64
	MonthMinSeq, MonthMaxSeq   int64
	// LegacyHash and MonthHash are SHA-256 (hex) over the ordered (seq, msg_id, status,
	// content) of each side; equal hashes mean byte-identical rows.
	LegacyHash, MonthHash string
	// Modified counts rows changed through imd after the cutover (a higher version in the
	// month table, e.g. a recall): accepted, not a mismatch.
	Modified   int64
	Mismatches []Mismatch
}

// OK reports whether the topic's month matched.
func (r TopicResult) OK() bool { return len(r.Mismatches) == 0 }

// MaxReportedMismatches bounds the mismatches a report lists; the rest are only counted.
const MaxReportedMismatches = 100

// Report is the outcome of verifying one or more months.
type Report struct {
	Months      []month.Month `json:"months"`
	TopicMonths int64         `json:"topic_months"`
	Rows        int64         `json:"rows"`
	Modified    int64         `json:"modified"`
	Mismatches  []Mismatch    `json:"mismatches,omitempty"`
	// Unlisted counts mismatches beyond MaxReportedMismatches.
	Unlisted int64     `json:"unlisted,omitempty"`
	At       time.Time `json:"at"`
}

// OK reports whether nothing mismatched.
func (r Report) OK() bool { return len(r.Mismatches) == 0 && r.Unlisted == 0 }

// Add folds one topic's result into the report.
func (r *Report) Add(t TopicResult) {
	r.TopicMonths++
	r.Rows += t.LegacyRows
	r.Modified += t.Modified
	for _, m := range t.Mismatches {
		if len(r.Mismatches) < MaxReportedMismatches {
			r.Mismatches = append(r.Mismatches, m)
		} else {
			r.Unlisted++
		}
	}
}

// ErrNoTable: the tenant has no legacy table to migrate.
var ErrNoTable = errors.New("no legacy table")

// ErrPhaseChanged: a phase change found the job in another phase than expected.
var ErrPhaseChanged = errors.New("migration phase changed")

// PhaseChange is a compare-and-set of a job's phase and what changes with it.
type PhaseChange struct {
	From []Phase
	To   Phase
	// Error is the job's error text after the change; "" clears it.
	Error string
	// Report replaces the job's last verification report when not nil.
	Report *Report
}

// PhaseChangedError is the refusal of a change that expected the job in one of from.
func PhaseChangedError(now Phase, from []Phase) error {
	return fmt.Errorf("%w: the migration is %s, not %v", ErrPhaseChanged, now, from)
}

// Compare orders cursors in copy order, (created_at, message_id).
func (c Cursor) Compare(o Cursor) int {
	return cmp.Or(c.CreatedAt.Compare(o.CreatedAt), cmp.Compare(c.MsgID, o.MsgID))
}

// CursorOf is the position of the message in copy order.
func CursorOf(m message.Message) Cursor { return Cursor{CreatedAt: m.CreatedAt, MsgID: m.MsgID} }

// CompareRows is the order of the verification streams: topic as bytes, then seq.
func CompareRows(a, b Row) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Seq, b.Seq))
}

// RowOf is what verification compares of m; it shares no memory with m.
func RowOf(m message.Message) Row {
	r := Row{Topic: m.Topic, Seq: m.Seq, MsgID: m.MsgID, Status: string(m.Status), Version: m.Version}
	if m.Content != nil {
		r.Content = slices.Clone([]byte(m.Content))
	}
	return r
}

// Restart resets the job for a rerun from the first row: a new run, copying, nothing handled.
func (j *Job) Restart() {
	j.Phase, j.Run, j.Cursor, j.CopyDone, j.Error = PhaseCopying, j.Run+1, Cursor{}, false, ""
	j.Copied, j.Skipped, j.Failed, j.Batches = 0, 0, 0, 0
}

// Resume is the phase a job continues in once its verification is cleared: verifying after a
// complete copy, else copying.
func (j Job) Resume() Phase {
	if j.CopyDone {
		return PhaseVerifying
	}
	return PhaseCopying
}

// Restart clears the month's counts of the previous run and its verification.
func (m *MonthProgress) Restart() {
	m.Copied, m.Skipped, m.Failed = 0, 0, 0
	m.Unverify()
}

// Unverify clears the month's verification.
func (m *MonthProgress) Unverify() { m.Verified, m.VerifiedAt = Unverified, time.Time{} }

// Outcome is what the copy did with one legacy row.
type Outcome int

const (
	// Copied: the row is now in its month table.
	Copied Outcome = iota + 1
	// Skipped: the month table held the row's msg_id already (a previous run copied it).
	Skipped
	// Failed: another message of the month table holds the row's (topic, seq) or client_msg_id.
	Failed
)

// Count adds one row's outcome to the batch, naming the first failed rows.
func (b *Batch) Count(o Outcome, key TopicSeq) {
	switch o {
	case Copied:
		b.Copied++
	case Skipped:
		b.Skipped++
	case Failed:
		b.Failed++
		if len(b.FailedKeys) < MaxFailedKeys {
			b.FailedKeys = append(b.FailedKeys, key)
		}
	}
}

// Count adds one row's outcome to the month.
func (m *MonthProgress) Count(o Outcome) {
	switch o {
	case Copied:
		m.Copied++
	case Skipped:
		m.Skipped++
	case Failed:
		m.Failed++
	}
}

// Record adds a committed batch to the job: its cursor and counts.
func (j *Job) Record(b Batch) {
	j.Cursor = b.End
	j.Copied, j.Skipped, j.Failed = j.Copied+int64(b.Copied), j.Skipped+int64(b.Skipped), j.Failed+int64(b.Failed)
	j.Batches++
}

// Span is when one batch read and wrote its rows.
type Span struct {
	Rows              int64
	Started, Finished time.Time
}

// RateBatches is how many of the newest batches of a run the copy rate is measured over.
const RateBatches = 10

// StalledAfter is how long after the newest batch the copy counts as not moving.
const StalledAfter = time.Minute

// Rate is rows per second over the spans (newest first), pauses between them included; 0
// when there are none or the newest finished more than StalledAfter before now.
func Rate(spans []Span, now time.Time) float64 {
	if len(spans) == 0 || now.Sub(spans[0].Finished) > StalledAfter {
		return 0
	}
	var rows int64
	for _, s := range spans {
		rows += s.Rows
	}
	span := spans[0].Finished.Sub(spans[len(spans)-1].Started)
	if span <= 0 {
		return 0
	}
	return float64(rows) / span.Seconds()
}

// Inventory is the legacy table at the cutover: each topic's segments by month.
type Inventory route.Mirror

// Add counts one legacy row into the inventory.
func (inv Inventory) Add(m message.Message) {
	route.Mirror(inv).Grow(m.Topic, m.Month, m.Seq, m.CreatedAt)
}

// Route is the topic's segments.
func (inv Inventory) Route(topic string) route.Route { return route.Mirror(inv).Route(topic) }

// Watermarks are each topic's highest seq: its cutover seq.
func (inv Inventory) Watermarks() map[string]int64 {
	out := make(map[string]int64, len(inv))
	for topic := range inv {
		out[topic] = inv.Route(topic).MaxSeq()
	}
	return out
}

// Months are the progress rows a cutover starts with, one per month, in month order.
func (inv Inventory) Months() []MonthProgress {
	byMonth := make(map[month.Month]*MonthProgress)
	for _, months := range inv {
		for m, s := range months {
			mp, ok := byMonth[m]
			if !ok {
				mp = &MonthProgress{Month: m}
				byMonth[m] = mp
			}
			mp.Rows += s.Count
			mp.Topics++
		}
	}
	out := make([]MonthProgress, 0, len(byMonth))
	for _, m := range slices.Sorted(maps.Keys(byMonth)) {
		out = append(out, *byMonth[m])
	}
	return out
}

// Topics are the topics' parts of month m with their cutover seqs, by topic.
func (inv Inventory) Topics(m month.Month, watermarks map[string]int64) []TopicMonth {
	var out []TopicMonth
	for _, topic := range slices.Sorted(maps.Keys(inv)) {
		if s, ok := inv[topic][m]; ok {
			out = append(out, TopicMonth{Topic: topic, Month: m, MinSeq: s.MinSeq, MaxSeq: s.MaxSeq, Rows: s.Count, CutoverSeq: watermarks[topic]})
		}
	}
	return out
}

// Add counts one legacy row created in the plan's month.
func (p *MonthPlan) Add(createdAt time.Time) {
	if p.Rows == 0 || createdAt.Before(p.MinCreatedAt) {
		p.MinCreatedAt = createdAt
	}
	if p.Rows == 0 || createdAt.After(p.MaxCreatedAt) {
		p.MaxCreatedAt = createdAt
	}
	p.Rows++
}
