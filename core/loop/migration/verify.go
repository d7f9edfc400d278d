package migration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/month"
)

// maxMismatchesPerTopic bounds the seq ranges one topic reports; a topic that differs
// everywhere needs one look, not thousands of lines.
const maxMismatchesPerTopic = 20

// errMismatch: verification found a difference; the job's report names it.
var errMismatch = errors.New("verification found differences")

// verifyBefore verifies every month before the cursor's month that has not verified OK yet:
// the cursor has left those months behind, so their rows are all copied.
func (r *runner) verifyBefore(ctx context.Context, cursor month.Month) error {
	if r.verified == nil {
		p, err := r.s.d.Store.Progress(ctx, r.tenant)
		if err != nil {
			return fmt.Errorf("read months: %w", err)
		}
		r.verified = make(map[month.Month]bool, len(p.Months))
		for _, mp := range p.Months {
			r.verified[mp.Month] = mp.Verified == legacy.VerifiedOK
		}
	}
	var due []month.Month
	for m, ok := range r.verified {
		if !ok && m < cursor {
			due = append(due, m)
		}
	}
	slices.Sort(due)
	for _, m := range due {
		if err := r.verifyMonths(ctx, []month.Month{m}, legacy.PhaseCopying); err != nil {
			return err
		}
		r.verified[m] = true
	}
	return nil
}

// verifyAll verifies every month not verified OK yet, rebuilds every topic's route from the
// mirror (now holding the copied months) and marks the job verified.
func (r *runner) verifyAll(ctx context.Context) error {
	p, err := r.s.d.Store.Progress(ctx, r.tenant)
	if err != nil {
		return fmt.Errorf("read months: %w", err)
	}
	var due []month.Month
	for _, mp := range p.Months {
		if mp.Verified != legacy.VerifiedOK {
			due = append(due, mp.Month)
		}
	}
	if err := r.verifyMonths(ctx, due, legacy.PhaseVerifying); err != nil {
		return err
	}
	if err := r.eachTopic(ctx, func(w legacy.TopicSeq) error { return r.rebuildRoute(ctx, w.Topic) }); err != nil {
		return err
	}
	rep := legacy.Report{At: time.Now().UTC()}
	for _, mp := range p.Months {
		rep.Months = append(rep.Months, mp.Month)
		rep.Rows += mp.Rows
		rep.TopicMonths += mp.Topics
	}
	_, err = r.s.setPhase(ctx, r.tenant, legacy.PhaseChange{
		From: []legacy.Phase{legacy.PhaseVerifying}, To: legacy.PhaseVerified, Report: &rep,
	})
	if err != nil && !errors.Is(err, legacy.ErrPhaseChanged) {
		return fmt.Errorf("mark verified: %w", err)
	}
	r.s.d.Log.InfoContext(ctx, "migration verified", "tenant", r.tenant, "months", len(p.Months), "rows", rep.Rows)
	return nil
}

// verifyMonths compares the months one by one and fails the job (from phase) with a report at
// the first month that differs.
func (r *runner) verifyMonths(ctx context.Context, months []month.Month, from legacy.Phase) error {
	for _, m := range months {
		rep, err := r.verifyMonth(ctx, m)
		if err != nil {
			return err
		}
		if rep.OK() {
			continue
		}
		r.s.d.Metrics.Add("migration_verify_mismatches_total", float64(len(rep.Mismatches))+float64(rep.Unlisted))
		msg := describe(rep)
		r.s.d.Log.ErrorContext(ctx, "migration stopped: verification mismatch", "tenant", r.tenant, "month", m.String(), "report", msg)
		if _, err := r.s.setPhase(ctx, r.tenant, legacy.PhaseChange{
			From: []legacy.Phase{from}, To: legacy.PhaseFailed, Error: msg, Report: &rep,
		}); err != nil && !errors.Is(err, legacy.ErrPhaseChanged) {
			return fmt.Errorf("record mismatch of %s: %w", m, err)
		}
		return fmt.Errorf("%w: %s", errMismatch, msg)
	}
	return nil
}

// verifyMonth compares one month and records the per-topic results.
func (r *runner) verifyMonth(ctx context.Context, m month.Month) (legacy.Report, error) {
	inv, err := r.s.d.Store.MonthTopics(ctx, r.tenant, m)
	if err != nil {
		return legacy.Report{}, fmt.Errorf("inventory of %s: %w", m, err)
	}
	compared := r.s.startVerify(r.tenant, m)
	defer r.s.endVerify(r.tenant)
	results, err := Compare(m, inv, counting(r.s.d.Store.LegacyRows(ctx, r.tenant, m), compared), r.s.d.Store.MonthRows(ctx, r.tenant, m))
	if err != nil {
		return legacy.Report{}, fmt.Errorf("verify %s: %w", m, err)
	}
	rep := legacy.Report{Months: []month.Month{m}, At: time.Now().UTC()}
	known := make(map[string]bool, len(inv))
	for _, tm := range inv {
		known[tm.Topic] = true
	}
	recorded := make([]legacy.TopicResult, 0, len(results))
	for _, t := range results {
		rep.Add(t)
		if known[t.Topic] {
			recorded = append(recorded, t)
		}
	}
	state := legacy.VerifiedOK
	if !rep.OK() {
		state = legacy.Mismatched
	}
	if err := r.s.d.Store.RecordVerification(ctx, r.tenant, m, state, recorded); err != nil {
		return legacy.Report{}, fmt.Errorf("record verification of %s: %w", m, err)
	}
	return rep, nil
}

// verifyCount is the month a runner compares and the legacy rows it has compared, for Status.
type verifyCount struct {
	month month.Month
	rows  atomic.Int64
}

func (s *Service) startVerify(tenant string, m month.Month) *atomic.Int64 {
	v := &verifyCount{month: m}
	s.mu.Lock()
	s.verifying[tenant] = v
	s.mu.Unlock()
	return &v.rows
}

func (s *Service) endVerify(tenant string) {
	s.mu.Lock()
	delete(s.verifying, tenant)
	s.mu.Unlock()
}

// counting passes rows through, adding one to n per row.
func counting(rows iter.Seq2[legacy.Row, error], n *atomic.Int64) iter.Seq2[legacy.Row, error] {
	return func(yield func(legacy.Row, error) bool) {
		for row, err := range rows {
			if err == nil {
				n.Add(1)
			}
			if !yield(row, err) {
				return
			}
		}
	}
}

// describe names the first mismatches for the job's error text.
func describe(rep legacy.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d mismatching ranges", len(rep.Mismatches)+int(rep.Unlisted))
	for i, mm := range rep.Mismatches {
		if i == 5 {
			b.WriteString(", …")
			break
		}
		fmt.Fprintf(&b, "; %s %s seq %d-%d: %s (%d rows)", mm.Topic, mm.Month, mm.FromSeq, mm.ToSeq, mm.Kind, mm.Rows)
	}
	return b.String()
}

// Compare merges the legacy rows and the month rows of month m — both ordered by topic (as
// bytes), then seq — into one result per topic: row counts, seq ranges, a SHA-256 over each
// side's ordered (seq, msg_id, status, content), and the seq ranges that differ. A row the
// month table holds in a later version (changed through imd after the cutover) is counted as
// modified, not as a mismatch. inv is the month's cutover inventory: a topic whose legacy rows
// no longer match it in number was written after the cutover.
func Compare(m month.Month, inv []legacy.TopicMonth, legacyRows, monthRows iter.Seq2[legacy.Row, error]) ([]legacy.TopicResult, error) {
	nextL, stopL := iter.Pull2(legacyRows)
	defer stopL()
	nextR, stopR := iter.Pull2(monthRows)
	defer stopR()
	pull := func(next func() (legacy.Row, error, bool)) (legacy.Row, bool, error) {
		row, err, ok := next()
		if ok && err != nil {
			return legacy.Row{}, false, err
		}
		return row, ok, nil
	}
	l, lok, err := pull(nextL)
	if err != nil {
		return nil, fmt.Errorf("legacy rows: %w", err)
	}
	rr, rok, err := pull(nextR)
	if err != nil {
		return nil, fmt.Errorf("month rows: %w", err)
	}
	expected := make(map[string]legacy.TopicMonth, len(inv))
	for _, tm := range inv {
		expected[tm.Topic] = tm
	}
	var (
		out []legacy.TopicResult
		cur *topicCompare
	)
	flush := func() {
		if cur != nil {
			out = append(out, cur.result(expected))
			delete(expected, cur.res.Topic)
		}
	}
	for lok || rok {
		c := 0
		switch {
		case !rok:
			c = -1
		case !lok:
			c = 1
		default:
			c = legacy.CompareRows(l, rr)
		}
		topic := l.Topic
		if c > 0 {
			topic = rr.Topic
		}
		if cur == nil || cur.res.Topic != topic {
			flush()
			cur = newTopicCompare(m, topic)
		}
		switch {
		case c == 0:
			cur.both(l, rr)
		case c < 0:
			cur.legacyOnly(l)
		default:
			cur.monthOnly(rr)
		}
		if c <= 0 {
			if l, lok, err = pull(nextL); err != nil {
				return nil, fmt.Errorf("legacy rows: %w", err)
			}
		}
		if c >= 0 {
			if rr, rok, err = pull(nextR); err != nil {
				return nil, fmt.Errorf("month rows: %w", err)
			}
		}
	}
	flush()
	// Topics of the inventory with no row left in the month on either side.
	for _, topic := range slices.Sorted(maps.Keys(expected)) {
		cur = newTopicCompare(m, topic)
		out = append(out, cur.result(expected))
	}
	return out, nil
}

// topicCompare accumulates one topic's comparison.
type topicCompare struct {
	res    legacy.TopicResult
	lh, mh hash.Hash
	open   *legacy.Mismatch // the run of differing seqs being extended
}

func newTopicCompare(m month.Month, topic string) *topicCompare {
	return &topicCompare{res: legacy.TopicResult{Topic: topic, Month: m}, lh: sha256.New(), mh: sha256.New()}
}

func (t *topicCompare) both(l, m legacy.Row) {
	t.countLegacy(l)
	t.countMonth(m)
	switch {
	case sameRow(l, m):
		t.close()
	case l.MsgID == m.MsgID && m.Version > l.Version:
		t.res.Modified++
		t.close()
	default:
		t.mismatch(legacy.Differs, l.Seq)
	}
}

func (t *topicCompare) legacyOnly(l legacy.Row) {
	t.countLegacy(l)
	t.mismatch(legacy.Missing, l.Seq)
}

func (t *topicCompare) monthOnly(m legacy.Row) {
	t.countMonth(m)
	t.mismatch(legacy.Extra, m.Seq)
}

func (t *topicCompare) countLegacy(r legacy.Row) {
	if t.res.LegacyRows == 0 {
		t.res.LegacyMinSeq = r.Seq
	}
	t.res.LegacyRows++
	t.res.LegacyMaxSeq = r.Seq
	writeRow(t.lh, r)
}

func (t *topicCompare) countMonth(r legacy.Row) {
	if t.res.MonthRows == 0 {
		t.res.MonthMinSeq = r.Seq
	}
	t.res.MonthRows++
	t.res.MonthMaxSeq = r.Seq
	writeRow(t.mh, r)
}

// mismatch extends the open run when it is of the same kind, else opens a new one.
func (t *topicCompare) mismatch(kind legacy.MismatchKind, seq int64) {
	if t.open != nil && t.open.Kind == kind {
		t.open.ToSeq = seq
		t.open.Rows++
		return
	}
	t.close()
	t.open = &legacy.Mismatch{Topic: t.res.Topic, Month: t.res.Month, Kind: kind, FromSeq: seq, ToSeq: seq, Rows: 1}
}

// close ends the open run of differing seqs.
func (t *topicCompare) close() {
	if t.open == nil {
		return
	}
	if len(t.res.Mismatches) < maxMismatchesPerTopic {
		t.res.Mismatches = append(t.res.Mismatches, *t.open)
	}
	t.open = nil
}

// result finishes the topic, checking its legacy rows against the cutover inventory.
func (t *topicCompare) result(inv map[string]legacy.TopicMonth) legacy.TopicResult {
	t.close()
	if want, ok := inv[t.res.Topic]; !ok && t.res.LegacyRows > 0 || ok && want.Rows != t.res.LegacyRows {
		lo, hi := want.MinSeq, want.MaxSeq
		if !ok {
			lo, hi = t.res.LegacyMinSeq, t.res.LegacyMaxSeq
		}
		t.res.Mismatches = append(t.res.Mismatches, legacy.Mismatch{
			Topic: t.res.Topic, Month: t.res.Month, Kind: legacy.LegacyChanged, FromSeq: lo, ToSeq: hi,
			Rows: t.res.LegacyRows - want.Rows,
		})
	}
	t.res.LegacyHash = hex.EncodeToString(t.lh.Sum(nil))
	t.res.MonthHash = hex.EncodeToString(t.mh.Sum(nil))
	return t.res
}

func sameRow(a, b legacy.Row) bool {
	return a.MsgID == b.MsgID && a.Status == b.Status && (a.Content == nil) == (b.Content == nil) && bytes.Equal(a.Content, b.Content)
}

// writeRow feeds one row to a side's hash in a form where no two rows encode alike: fixed-width
// numbers, length-prefixed strings, and NULL content told apart from empty content.
func writeRow(h hash.Hash, r legacy.Row) {
	var num [8]byte
	put := func(v uint64) {
		binary.BigEndian.PutUint64(num[:], v)
		h.Write(num[:])
	}
	put(uint64(r.Seq))
	put(uint64(r.MsgID))
	put(uint64(len(r.Status)))
	h.Write([]byte(r.Status))
	if r.Content == nil {
		h.Write([]byte{0})
		return
	}
	h.Write([]byte{1})
	put(uint64(len(r.Content)))
	h.Write(r.Content)
}
