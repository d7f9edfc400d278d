package legacy

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
)

var t0 = time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)

func TestRate(t *testing.T) {
	span := func(rows int64, from, to time.Duration) Span {
		return Span{Rows: rows, Started: t0.Add(from), Finished: t0.Add(to)}
	}
	tests := []struct {
		name  string
		spans []Span
		now   time.Time
		want  float64
	}{
		{"no batches", nil, t0, 0},
		{"one batch", []Span{span(1000, 0, time.Second)}, t0.Add(time.Second), 1000},
		{"pauses count", []Span{span(1000, 3*time.Second, 4*time.Second), span(1000, 0, time.Second)}, t0.Add(4 * time.Second), 500},
		{"stalled", []Span{span(1000, 0, time.Second)}, t0.Add(time.Second + StalledAfter + 1), 0},
		{"no time passed", []Span{span(1000, 0, 0)}, t0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Rate(tt.spans, tt.now); got != tt.want {
				t.Errorf("Rate = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOrders(t *testing.T) {
	cursors := []Cursor{{t0.Add(time.Second), 1}, {t0, 9}, {t0, 2}}
	slices.SortFunc(cursors, Cursor.Compare)
	if want := []Cursor{{t0, 2}, {t0, 9}, {t0.Add(time.Second), 1}}; !slices.Equal(cursors, want) {
		t.Errorf("copy order = %v, want %v", cursors, want)
	}
	for i := 1; i < len(cursors); i++ {
		if !cursors[i-1].Before(cursors[i]) {
			t.Errorf("%v is not Before %v although Compare orders it first", cursors[i-1], cursors[i])
		}
	}
	rows := []Row{{Topic: "b", Seq: 1}, {Topic: "a", Seq: 10}, {Topic: "a", Seq: 2}, {Topic: "B", Seq: 5}}
	slices.SortFunc(rows, CompareRows)
	var got []string
	for _, r := range rows {
		got = append(got, r.Topic)
	}
	// Topics compare as bytes: upper case first.
	if want := []string{"B", "a", "a", "b"}; !slices.Equal(got, want) || rows[1].Seq != 2 {
		t.Errorf("row order = %v (seq %d second), want %v with seq 2 second", got, rows[1].Seq, want)
	}
}

func TestRowOf(t *testing.T) {
	m := message.Message{Topic: "grp_1", Seq: 3, MsgID: 7, Status: message.StatusNormal, Version: 2, Content: []byte(`{"t":1}`)}
	r := RowOf(m)
	m.Content[0] = 'x'
	if r.Topic != "grp_1" || r.Seq != 3 || r.MsgID != 7 || r.Status != "normal" || r.Version != 2 || string(r.Content) != `{"t":1}` {
		t.Errorf("RowOf = %+v", r)
	}
	if RowOf(message.Message{}).Content != nil {
		t.Error("a message without content must give SQL NULL (nil)")
	}
}

func TestCount(t *testing.T) {
	var b Batch
	var mp MonthProgress
	for i := range MaxFailedKeys + 5 {
		b.Count(Failed, TopicSeq{Topic: "grp_1", Seq: int64(i)})
		mp.Count(Failed)
	}
	for _, o := range []Outcome{Copied, Copied, Skipped} {
		b.Count(o, TopicSeq{})
		mp.Count(o)
	}
	if b.Copied != 2 || b.Skipped != 1 || b.Failed != MaxFailedKeys+5 || len(b.FailedKeys) != MaxFailedKeys {
		t.Errorf("batch = %d copied, %d skipped, %d failed, %d keys", b.Copied, b.Skipped, b.Failed, len(b.FailedKeys))
	}
	if mp.Done() != int64(MaxFailedKeys+8) || mp.Copied != 2 || mp.Skipped != 1 {
		t.Errorf("month = %+v", mp)
	}
	var j Job
	b.End = Cursor{t0, 9}
	j.Record(b)
	j.Record(Batch{End: Cursor{t0, 10}, Copied: 1})
	if j.Cursor != (Cursor{t0, 10}) || j.Copied != 3 || j.Skipped != 1 || j.Failed != int64(MaxFailedKeys+5) || j.Batches != 2 {
		t.Errorf("job = %+v", j)
	}
}

func TestRestartAndResume(t *testing.T) {
	j := Job{Phase: PhaseFailed, Run: 2, Cursor: Cursor{t0, 5}, CopyDone: true, Error: "mismatch", Copied: 4, Skipped: 1, Failed: 1, Batches: 3, Rows: 6}
	if j.Resume() != PhaseVerifying {
		t.Errorf("a complete copy resumes %s, want verifying", j.Resume())
	}
	j.Restart()
	want := Job{Phase: PhaseCopying, Run: 3, Rows: 6}
	if j != want {
		t.Errorf("Restart = %+v, want %+v", j, want)
	}
	if j.Resume() != PhaseCopying {
		t.Errorf("an incomplete copy resumes %s, want copying", j.Resume())
	}
	mp := MonthProgress{Month: 202610, Rows: 6, Copied: 4, Failed: 2, Verified: Mismatched, VerifiedAt: t0}
	mp.Restart()
	if mp != (MonthProgress{Month: 202610, Rows: 6}) {
		t.Errorf("month Restart = %+v", mp)
	}
}

func TestPhaseChangedError(t *testing.T) {
	err := PhaseChangedError(PhasePaused, []Phase{PhaseCopying})
	if !errors.Is(err, ErrPhaseChanged) {
		t.Errorf("%v is not ErrPhaseChanged", err)
	}
}

func TestInventory(t *testing.T) {
	oct, nov := month.Month(202610), month.Month(202611)
	at := func(m month.Month, min int) time.Time { return m.Start().Add(time.Duration(min) * time.Minute) }
	inv := make(Inventory)
	for _, m := range []message.Message{
		{Topic: "grp_1", Seq: 1, Month: oct, CreatedAt: at(oct, 1)},
		{Topic: "grp_1", Seq: 2, Month: oct, CreatedAt: at(oct, 2)},
		{Topic: "grp_1", Seq: 3, Month: nov, CreatedAt: at(nov, 1)},
		{Topic: "grp_2", Seq: 8, Month: oct, CreatedAt: at(oct, 5)},
	} {
		inv.Add(m)
	}
	wantRoute := route.Route{
		{Month: oct, MinSeq: 1, MaxSeq: 2, Count: 2, MinCreatedAt: at(oct, 1), MaxCreatedAt: at(oct, 2)},
		{Month: nov, MinSeq: 3, MaxSeq: 3, Count: 1, MinCreatedAt: at(nov, 1), MaxCreatedAt: at(nov, 1)},
	}
	if got := inv.Route("grp_1"); !slices.Equal(got, wantRoute) {
		t.Errorf("Route = %+v, want %+v", got, wantRoute)
	}
	w := inv.Watermarks()
	if len(w) != 2 || w["grp_1"] != 3 || w["grp_2"] != 8 {
		t.Errorf("Watermarks = %v", w)
	}
	wantMonths := []MonthProgress{{Month: oct, Rows: 3, Topics: 2}, {Month: nov, Rows: 1, Topics: 1}}
	if got := inv.Months(); !slices.Equal(got, wantMonths) {
		t.Errorf("Months = %+v, want %+v", got, wantMonths)
	}
	wantTopics := []TopicMonth{
		{Topic: "grp_1", Month: oct, MinSeq: 1, MaxSeq: 2, Rows: 2, CutoverSeq: 3},
		{Topic: "grp_2", Month: oct, MinSeq: 8, MaxSeq: 8, Rows: 1, CutoverSeq: 8},
	}
	if got := inv.Topics(oct, w); !slices.Equal(got, wantTopics) {
		t.Errorf("Topics = %+v, want %+v", got, wantTopics)
	}
}

func TestMonthPlanAdd(t *testing.T) {
	p := MonthPlan{Month: 202610}
	for _, d := range []time.Duration{time.Hour, time.Minute, 2 * time.Hour} {
		p.Add(t0.Add(d))
	}
	if p.Rows != 3 || !p.MinCreatedAt.Equal(t0.Add(time.Minute)) || !p.MaxCreatedAt.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("plan = %+v", p)
	}
}
