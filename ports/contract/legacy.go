package contract

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

// LegacyFixture is a tenant whose legacy table Load fills: the month-table stores of its
// database and both ports of the migration over it.
type LegacyFixture struct {
	Tenant    string
	Store     ports.MessageStore
	Shards    ports.ShardStore
	DeleteLog ports.DeleteLog
	Legacy    ports.LegacyMessages
	Jobs      ports.MigrationStore
	// Load creates the legacy table if needed and writes rows into it (conversation ids 0).
	Load func(t *testing.T, rows []message.Message)
}

// legacyRows: grp_1 seqs 1-3 in monthA (seq 2 deleted for everyone), 4-6 in monthB; grp_2
// seq 1 in monthA. msg_ids are 100 + the row's place.
func legacyRows() []message.Message {
	var rows []message.Message
	add := func(topicName string, sq int64, m month.Month) {
		msg := newMessage(topicName, sq, int64(100+len(rows)), m)
		rows = append(rows, msg)
	}
	for sq := int64(1); sq <= 3; sq++ {
		add("grp_1", sq, monthA)
	}
	for sq := int64(4); sq <= 6; sq++ {
		add("grp_1", sq, monthB)
	}
	add("grp_2", 1, monthA)
	rows[1].Status, rows[1].Content, rows[1].Version = message.StatusDeleted, nil, 2
	rows[2].Content = json.RawMessage(`{"text":"收到 legacy"}`)
	return rows
}

// Legacy checks ports.LegacyMessages and ports.MigrationStore (seed 000 §9): reads of the
// legacy table that skip copied rows, the cutover watermark and inventory, idempotent copy
// batches by (created_at, msg_id), the verification streams, phase changes, the lease and the
// retirement of the table.
func Legacy(t *testing.T, fresh func(t *testing.T) LegacyFixture) {
	t.Run("without a legacy table", func(t *testing.T) {
		f := fresh(t)
		ctx := context.Background()
		st, err := f.Legacy.Status(ctx, f.Tenant)
		if err != nil || st != (legacy.Status{Phase: legacy.PhaseNone}) {
			t.Fatalf("Status = %+v, %v", st, err)
		}
		if _, err := f.Jobs.Cutover(ctx, f.Tenant); !errors.Is(err, legacy.ErrNoTable) {
			t.Fatalf("Cutover without a table: %v", err)
		}
		if p, err := f.Jobs.Plan(ctx, f.Tenant); err != nil || p.Present {
			t.Fatalf("Plan = %+v, %v", p, err)
		}
		if err := f.Jobs.Finish(ctx, f.Tenant); !errors.Is(err, legacy.ErrNoTable) {
			t.Fatalf("Finish without a table: %v", err)
		}
	})
	t.Run("reads skip copied rows", func(t *testing.T) { legacyReads(t, fresh(t)) })
	t.Run("cutover, copy and verification streams", func(t *testing.T) { legacyCopy(t, fresh(t)) })
	t.Run("phases, lease and retirement", func(t *testing.T) { legacyPhases(t, fresh(t)) })
}

func legacyReads(t *testing.T, f LegacyFixture) {
	ctx := context.Background()
	writable(t, f.Shards, f.Tenant, monthA)
	rows := legacyRows()
	f.Load(t, rows)
	if err := f.DeleteLog.HideRange(ctx, f.Tenant, "grp_1", 9, 3, 4); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Legacy.Status(ctx, f.Tenant); err != nil || !st.DualRead() || st.Phase != legacy.PhaseNone {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	for topicName, want := range map[string]int64{"grp_1": 6, "grp_2": 1, "grp_3": 0} {
		if got, err := f.Legacy.MaxSeq(ctx, f.Tenant, topicName); err != nil || got != want {
			t.Fatalf("MaxSeq(%s) = %d, %v; want %d", topicName, got, err, want)
		}
	}
	segs, err := f.Legacy.Segments(ctx, f.Tenant, "grp_1")
	if err != nil {
		t.Fatal(err)
	}
	wantSegments(t, segs, segment{monthA, 1, 3, 3}, segment{monthB, 4, 6, 3})

	got, err := f.Legacy.Get(ctx, f.Tenant, monthA, "grp_1", 3)
	if err != nil {
		t.Fatal(err)
	}
	sameMessage(t, got, rows[2])
	if _, err := f.Legacy.Get(ctx, f.Tenant, monthB, "grp_1", 3); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("Get in another month: %v", err)
	}
	if got, err := f.Legacy.FindByID(ctx, f.Tenant, monthB, rows[4].MsgID); err != nil || got.Seq != 5 {
		t.Fatalf("FindByID = %+v, %v", got, err)
	}
	if _, err := f.Legacy.FindByID(ctx, f.Tenant, monthA, rows[4].MsgID); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("FindByID in another month: %v", err)
	}

	cases := []struct {
		name string
		m    month.Month
		q    message.PageQuery
		want []int64
	}{
		{"forward, tombstone hidden", monthA, message.PageQuery{Topic: "grp_1", Limit: 10}, []int64{1, 3}},
		{"forward with tombstones", monthA, message.PageQuery{Topic: "grp_1", Limit: 10, IncludeDeleted: true}, []int64{1, 2, 3}},
		{"the viewer's deleted range", monthA, message.PageQuery{Topic: "grp_1", Limit: 10, Viewer: 9, IncludeDeleted: true}, []int64{1, 2}},
		{"backward from a cursor", monthB, message.PageQuery{Topic: "grp_1", Before: 6, Desc: true, Limit: 10}, []int64{5, 4}},
		{"limit", monthB, message.PageQuery{Topic: "grp_1", After: 3, Limit: 2}, []int64{4, 5}},
		{"a month without the topic", monthB, message.PageQuery{Topic: "grp_2", Limit: 10}, nil},
	}
	for _, tc := range cases {
		got, err := f.Legacy.Page(ctx, f.Tenant, tc.m, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(legacySeqs(got), tc.want) {
			t.Fatalf("%s: seqs %v, want %v", tc.name, legacySeqs(got), tc.want)
		}
	}
	found, err := f.Legacy.Search(ctx, f.Tenant, monthA, ports.SearchQuery{Text: "收到", From: monthA.Start(), To: monthB.End(), Limit: 10})
	if err != nil || len(found) != 1 || found[0].Seq != 3 {
		t.Fatalf("Search = %v, %v", found, err)
	}

	// A row the month table holds is the month table's to answer, even with other content.
	copied := rows[0]
	copied.Content = json.RawMessage(`{"text":"changed through imd"}`)
	mustAppend(t, f.Store, f.Tenant, copied, ports.Stored)
	if got, err := f.Legacy.Page(ctx, f.Tenant, monthA, message.PageQuery{Topic: "grp_1", Limit: 10}); err != nil || !slices.Equal(legacySeqs(got), []int64{3}) {
		t.Fatalf("Page after seq 1 was copied: %v, %v", legacySeqs(got), err)
	}
	// A month without a table has nothing copied yet.
	if got, err := f.Legacy.Page(ctx, f.Tenant, monthB, message.PageQuery{Topic: "grp_1", Limit: 10}); err != nil || len(got) != 3 {
		t.Fatalf("Page of a month without a table: %v, %v", legacySeqs(got), err)
	}

	p, err := f.Jobs.Plan(ctx, f.Tenant)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Present || p.Rows != 7 || p.Topics != 2 || len(p.Months) != 2 || p.MaxMsgID != 106 ||
		p.Months[0].Month != monthA || p.Months[0].Rows != 4 || p.Months[0].Topics != 2 || p.Months[0].TableState != "writable" ||
		p.Months[1].Rows != 3 || p.Months[1].TableState != "" {
		t.Fatalf("Plan = %+v", p)
	}
}

func legacyCopy(t *testing.T, f LegacyFixture) {
	ctx := context.Background()
	writable(t, f.Shards, f.Tenant, monthA)
	writable(t, f.Shards, f.Tenant, monthB)
	rows := legacyRows()
	f.Load(t, rows)
	// Another message already holds grp_2 seq 1: that legacy row cannot be copied.
	mustAppend(t, f.Store, f.Tenant, newMessage("grp_2", 1, 999, monthA), ports.Stored)

	job, err := f.Jobs.Cutover(ctx, f.Tenant)
	if err != nil {
		t.Fatal(err)
	}
	if job.Phase != legacy.PhaseCopying || job.Rows != 7 || job.Topics != 2 || job.Run != 1 || !job.Cursor.IsZero() || job.CutoverAt.IsZero() {
		t.Fatalf("Cutover = %+v", job)
	}
	if again, err := f.Jobs.Cutover(ctx, f.Tenant); err != nil || !again.CutoverAt.Equal(job.CutoverAt) {
		t.Fatalf("second Cutover = %+v, %v", again, err)
	}
	marks, err := f.Jobs.Watermarks(ctx, f.Tenant, "", 10)
	if err != nil || !slices.Equal(marks, []legacy.TopicSeq{{Topic: "grp_1", Seq: 6}, {Topic: "grp_2", Seq: 1}}) {
		t.Fatalf("Watermarks = %v, %v", marks, err)
	}
	if marks, err := f.Jobs.Watermarks(ctx, f.Tenant, "grp_1", 10); err != nil || len(marks) != 1 || marks[0].Topic != "grp_2" {
		t.Fatalf("Watermarks after grp_1 = %v, %v", marks, err)
	}
	inv, err := f.Jobs.MonthTopics(ctx, f.Tenant, monthA)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(inv, func(a, b legacy.TopicMonth) int { return strings.Compare(a.Topic, b.Topic) })
	if !slices.Equal(inv, []legacy.TopicMonth{
		{Topic: "grp_1", Month: monthA, MinSeq: 1, MaxSeq: 3, Rows: 3, CutoverSeq: 6},
		{Topic: "grp_2", Month: monthA, MinSeq: 1, MaxSeq: 1, Rows: 1, CutoverSeq: 1},
	}) {
		t.Fatalf("MonthTopics = %+v", inv)
	}

	// Copy in (created_at, msg_id) order: grp_1 seq 1 and grp_2 seq 1 share a time, then
	// grp_1 seq 2. grp_2 seq 1 is taken.
	b, err := f.Jobs.CopyBatch(ctx, f.Tenant, 3)
	if err != nil {
		t.Fatal(err)
	}
	if b.Rows != 3 || b.Copied != 2 || b.Skipped != 0 || b.Failed != 1 || b.End.MsgID != rows[1].MsgID ||
		!slices.Equal(b.FailedKeys, []legacy.TopicSeq{{Topic: "grp_2", Seq: 1}}) {
		t.Fatalf("first batch %+v", b)
	}
	wantRoute(t, f.Store, f.Tenant, "grp_1", segment{monthA, 1, 2, 2})
	// A row copied ahead of its batch (before an edit) is skipped by it.
	if found, err := f.Jobs.CopyMessage(ctx, f.Tenant, "grp_1", 6); err != nil || !found {
		t.Fatalf("CopyMessage = %v, %v", found, err)
	}
	if found, err := f.Jobs.CopyMessage(ctx, f.Tenant, "grp_1", 60); err != nil || found {
		t.Fatalf("CopyMessage of no row = %v, %v", found, err)
	}
	var total legacy.Batch
	for {
		b, err := f.Jobs.CopyBatch(ctx, f.Tenant, 3)
		if err != nil {
			t.Fatal(err)
		}
		if b.Rows == 0 {
			break
		}
		total.Copied, total.Skipped, total.Failed = total.Copied+b.Copied, total.Skipped+b.Skipped, total.Failed+b.Failed
		total.FailedKeys = append(total.FailedKeys, b.FailedKeys...)
	}
	if total.Copied != 3 || total.Skipped != 1 || total.Failed != 0 || len(total.FailedKeys) != 0 {
		t.Fatalf("later batches %+v", total)
	}
	wantRoute(t, f.Store, f.Tenant, "grp_1", segment{monthA, 1, 3, 3}, segment{monthB, 4, 6, 3})
	p, err := f.Jobs.Progress(ctx, f.Tenant)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Job.CopyDone || p.Job.Copied != 5 || p.Job.Skipped != 1 || p.Job.Failed != 1 || p.Job.Remaining() != 0 ||
		len(p.Months) != 2 || p.Months[0].Copied != 3 || p.Months[0].Failed != 1 || p.Months[1].Copied != 2 || p.Months[1].Skipped != 1 {
		t.Fatalf("Progress = %+v", p)
	}

	// The verification streams: topics as bytes, then seq; month rows at or below watermarks.
	left := collect(t, f.Jobs.LegacyRows(ctx, f.Tenant, monthA))
	wantKeys(t, "LegacyRows", left, "grp_1/1", "grp_1/2", "grp_1/3", "grp_2/1")
	if left[1].Content != nil || left[1].Status != "deleted" || left[1].Version != 2 || string(left[2].Content) != string(rows[2].Content) {
		t.Fatalf("legacy rows %+v", left)
	}
	mustAppend(t, f.Store, f.Tenant, newMessage("grp_1", 7, 1000, monthB), ports.Stored) // above the watermark
	right := collect(t, f.Jobs.MonthRows(ctx, f.Tenant, monthB))
	wantKeys(t, "MonthRows", right, "grp_1/4", "grp_1/5", "grp_1/6")
	if right[0].MsgID != rows[3].MsgID {
		t.Fatalf("month rows %+v", right)
	}
	other := collect(t, f.Jobs.MonthRows(ctx, f.Tenant, monthA))
	if other[3].Topic != "grp_2" || other[3].MsgID != 999 {
		t.Fatalf("month rows of monthA %+v", other)
	}

	if err := f.Jobs.RecordVerification(ctx, f.Tenant, monthA, legacy.Mismatched, []legacy.TopicResult{{Topic: "grp_2", Month: monthA}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Jobs.RecordVerification(ctx, f.Tenant, monthB, legacy.VerifiedOK, nil); err != nil {
		t.Fatal(err)
	}
	if p, err = f.Jobs.Progress(ctx, f.Tenant); err != nil || p.Months[0].Verified != legacy.Mismatched || p.Months[1].Verified != legacy.VerifiedOK || p.Months[1].VerifiedAt.IsZero() {
		t.Fatalf("Progress after verification = %+v, %v", p.Months, err)
	}
	// The inventory answers the routes now, whatever the legacy table holds.
	segs, err := f.Legacy.Segments(ctx, f.Tenant, "grp_1")
	if err != nil {
		t.Fatal(err)
	}
	wantSegments(t, segs, segment{monthA, 1, 3, 3}, segment{monthB, 4, 6, 3})
}

func legacyPhases(t *testing.T, f LegacyFixture) {
	ctx := context.Background()
	writable(t, f.Shards, f.Tenant, monthA)
	writable(t, f.Shards, f.Tenant, monthB)
	f.Load(t, legacyRows())
	if _, err := f.Jobs.SetPhase(ctx, f.Tenant, legacy.PhaseChange{From: []legacy.Phase{legacy.PhaseCopying}, To: legacy.PhasePaused}); !errors.Is(err, legacy.ErrPhaseChanged) {
		t.Fatalf("SetPhase before the cutover: %v", err)
	}
	if _, err := f.Jobs.Cutover(ctx, f.Tenant); err != nil {
		t.Fatal(err)
	}
	set := func(from []legacy.Phase, to legacy.Phase, errText string, rep *legacy.Report) (legacy.Job, error) {
		return f.Jobs.SetPhase(ctx, f.Tenant, legacy.PhaseChange{From: from, To: to, Error: errText, Report: rep})
	}
	if _, err := set([]legacy.Phase{legacy.PhasePaused}, legacy.PhaseCopying, "", nil); !errors.Is(err, legacy.ErrPhaseChanged) {
		t.Fatalf("SetPhase from the wrong phase: %v", err)
	}
	if j, err := set([]legacy.Phase{legacy.PhaseCopying}, legacy.PhasePaused, "", nil); err != nil || j.Phase != legacy.PhasePaused {
		t.Fatalf("pause = %+v, %v", j, err)
	}
	if j, err := set([]legacy.Phase{legacy.PhasePaused}, legacy.PhasePaused, "", nil); err != nil || j.Phase != legacy.PhasePaused {
		t.Fatalf("pause again = %+v, %v", j, err)
	}
	if _, err := f.Jobs.CopyBatch(ctx, f.Tenant, 10); !errors.Is(err, legacy.ErrPhaseChanged) {
		t.Fatalf("CopyBatch while paused: %v", err)
	}
	if _, err := set([]legacy.Phase{legacy.PhasePaused}, legacy.PhaseCopying, "", nil); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := f.Jobs.CopyBatch(ctx, f.Tenant, 100)
		if err != nil {
			t.Fatal(err)
		}
		if b.Rows == 0 {
			break
		}
	}
	if err := f.Jobs.MarkPrepared(ctx, f.Tenant); err != nil {
		t.Fatal(err)
	}
	rep := &legacy.Report{Months: []month.Month{monthA}, Rows: 7, Mismatches: []legacy.Mismatch{{Topic: "grp_1", Month: monthA, Kind: legacy.Differs, FromSeq: 2, ToSeq: 2, Rows: 1}}}
	j, err := set([]legacy.Phase{legacy.PhaseCopying}, legacy.PhaseFailed, "1 mismatching range", rep)
	if err != nil || j.Phase != legacy.PhaseFailed || j.Error != "1 mismatching range" || !j.Prepared ||
		j.Report == nil || len(j.Report.Mismatches) != 1 || j.Report.Mismatches[0] != rep.Mismatches[0] {
		t.Fatalf("fail = %+v, %v", j, err)
	}
	if j, err = f.Jobs.Reverify(ctx, f.Tenant, []legacy.Phase{legacy.PhaseFailed}); err != nil || j.Phase != legacy.PhaseVerifying || j.Error != "" {
		t.Fatalf("Reverify after a complete copy = %+v, %v", j, err)
	}
	if _, err = set([]legacy.Phase{legacy.PhaseVerifying}, legacy.PhaseVerified, "", &legacy.Report{Rows: 7}); err != nil {
		t.Fatal(err)
	}
	j, err = f.Jobs.Rerun(ctx, f.Tenant, []legacy.Phase{legacy.PhaseVerified})
	if err != nil || j.Phase != legacy.PhaseCopying || j.Run != 2 || !j.Cursor.IsZero() || j.CopyDone || j.Copied+j.Skipped+j.Failed != 0 {
		t.Fatalf("Rerun = %+v, %v", j, err)
	}
	b, err := f.Jobs.CopyBatch(ctx, f.Tenant, 100)
	if err != nil || b.Rows != 7 || b.Skipped != 7 {
		t.Fatalf("rerun batch %+v, %v", b, err)
	}

	release, ok, err := f.Jobs.Lease(ctx, f.Tenant)
	if err != nil || !ok {
		t.Fatalf("Lease = %v, %v", ok, err)
	}
	if _, ok, err := f.Jobs.Lease(ctx, f.Tenant); err != nil || ok {
		t.Fatalf("second Lease = %v, %v", ok, err)
	}
	release()
	release2, ok, err := f.Jobs.Lease(ctx, f.Tenant)
	if err != nil || !ok {
		t.Fatalf("Lease after release = %v, %v", ok, err)
	}
	release2()

	if err := f.Jobs.PrepareTable(ctx, f.Tenant); err != nil {
		t.Fatal(err)
	}
	if p, err := f.Jobs.Plan(ctx, f.Tenant); err != nil || !p.CursorIndex {
		t.Fatalf("Plan after PrepareTable = %+v, %v", p, err)
	}
	if err := f.Jobs.Finish(ctx, f.Tenant); err != nil {
		t.Fatal(err)
	}
	if err := f.Jobs.Finish(ctx, f.Tenant); err != nil {
		t.Fatalf("Finish again: %v", err)
	}
	if st, err := f.Legacy.Status(ctx, f.Tenant); err != nil || st.Present || st.DualRead() {
		t.Fatalf("Status after Finish = %+v, %v", st, err)
	}
	if _, err := f.Legacy.Page(ctx, f.Tenant, monthA, message.PageQuery{Topic: "grp_1", Limit: 10}); !errors.Is(err, legacy.ErrGone) {
		t.Fatalf("Page of a retired table: %v", err)
	}
	if _, err := f.Legacy.MaxSeq(ctx, f.Tenant, "grp_1"); !errors.Is(err, legacy.ErrGone) {
		t.Fatalf("MaxSeq of a retired table: %v", err)
	}
}

func wantSegments(t *testing.T, got route.Route, want ...segment) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("segments %+v, want %+v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Month != w.month || g.MinSeq != w.min || g.MaxSeq != w.max || g.Count != w.count || g.MinCreatedAt.IsZero() {
			t.Fatalf("segments %+v, want %+v", got, want)
		}
	}
}

func legacySeqs(msgs []message.Message) []int64 {
	var out []int64
	for _, m := range msgs {
		out = append(out, m.Seq)
	}
	return out
}

func collect(t *testing.T, rows iter.Seq2[legacy.Row, error]) []legacy.Row {
	t.Helper()
	var out []legacy.Row
	for r, err := range rows {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func wantKeys(t *testing.T, what string, rows []legacy.Row, want ...string) {
	t.Helper()
	var got []string
	for _, r := range rows {
		got = append(got, r.Topic+"/"+strconv.FormatInt(r.Seq, 10))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
