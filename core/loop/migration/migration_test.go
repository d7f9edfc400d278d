package migration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/loop/migration"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/store/dualread"
	"github.com/imdhq/imd/ports"
)

const tenant = "t1"

// The fixture's months: the legacy table spans m0-m5, m5 is the active month.
var (
	m0     = month.Month(203101)
	active = month.Month(203106)
)

type fixture struct {
	t       *testing.T
	shards  *memory.ShardStore
	store   *memory.MessageStore
	legacy  *memory.Legacy
	months  *memory.MonthState
	seqs    *memory.SeqAllocator
	routes  *memory.RouteCache
	metrics *memory.Metrics
	deps    migration.Deps
	cfg     migration.Config
	rows    []message.Message
}

// newFixture loads grp_1 (seqs 1-60, ten a month over m0-m5) and grp_2 (seqs 1-12, two a month)
// into the legacy table; the active month's table is writable.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := memory.NewClock(active.Start().Add(time.Hour))
	f := &fixture{
		t: t, shards: memory.NewShardStore(), months: memory.NewMonthState(clock.Now),
		routes: memory.NewRouteCache(), metrics: memory.NewMetrics(),
		cfg: migration.Config{BatchSize: migration.MinBatchSize, RowsPerSecond: -1, PollInterval: 10 * time.Millisecond, FailureBackoff: time.Millisecond},
	}
	f.store = memory.NewMessageStore(f.shards)
	f.legacy = memory.NewLegacy(f.shards, time.Now)
	f.seqs = memory.NewSeqAllocator(f.months, clock.Now)
	ctx := context.Background()
	if err := f.shards.EnsureTable(ctx, tenant, active); err != nil {
		t.Fatal(err)
	}
	if err := f.shards.SetState(ctx, tenant, active, shard.Prepared, shard.Writable); err != nil {
		t.Fatal(err)
	}
	if err := f.months.MarkReady(ctx, tenant, 0, active); err != nil {
		t.Fatal(err)
	}
	if _, err := f.months.Advance(ctx, tenant, 0, active); err != nil {
		t.Fatal(err)
	}
	id := int64(0)
	add := func(topicName string, perMonth int) {
		sq := int64(0)
		for m := m0; m <= active; m = m.Next() {
			for i := range perMonth {
				sq++
				id++
				f.rows = append(f.rows, message.Message{
					Topic: topicName, Seq: sq, MsgID: id, From: 7, ClientMsgID: fmt.Sprintf("c%d", id), Type: "text",
					Content: json.RawMessage(fmt.Sprintf(`{"text":"m%d"}`, id)), Status: message.StatusNormal, Version: 1,
					CreatedAt: m.Start().Add(time.Duration(i+1) * time.Minute), Month: m,
				})
			}
		}
	}
	add("grp_1", 10)
	add("grp_2", 2)
	f.legacy.Load(tenant, f.rows)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	src := dualread.NewSource(f.legacy, wallClock{}, time.Nanosecond, log)
	dual := dualread.NewStore(f.store, src)
	repair := routerepair.New(routerepair.Config{}, routerepair.Deps{
		Queue: memory.NewRepairQueue(), Store: dual, Mirror: memory.NewRouteMirror(f.shards), Routes: f.routes,
		Months: f.months, Metrics: f.metrics, Log: log,
	})
	f.deps = migration.Deps{
		Store: f.legacy, Shards: f.shards, Months: f.months, Seq: f.seqs, Routes: repair,
		Metrics: f.metrics, IDs: memory.NewIDs(clock), Clock: clock, Log: log, DualRead: true,
	}
	return f
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (f *fixture) service() *migration.Service { return migration.New(f.cfg, f.deps) }

func (f *fixture) run(svc *migration.Service) {
	f.runFor(svc, func() []string { return []string{tenant} })
}

// runFor runs the supervisor over the tenants the function names at each pass.
func (f *fixture) runFor(svc *migration.Service, tenants func() []string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.Run(ctx, tenants)
	}()
	f.t.Cleanup(func() { cancel(); <-done })
}

func (f *fixture) wait(svc *migration.Service, phases ...legacy.Phase) legacy.Progress {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := svc.Status(context.Background(), tenant)
		if err != nil {
			f.t.Fatal(err)
		}
		if slices.Contains(phases, p.Job.Phase) {
			return p
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("job is %s, not %v: %s", p.Job.Phase, phases, p.Job.Error)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestJobPreparesCopiesVerifiesAndFinishes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	svc := f.service()
	f.run(svc)
	plan, err := svc.Plan(ctx, tenant)
	if err != nil || plan.Rows != int64(len(f.rows)) || len(plan.Months) != 6 || plan.Phase != legacy.PhaseNone || len(plan.Warnings) != 0 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	job, err := svc.Start(ctx, tenant, false)
	if err != nil || job.Phase != legacy.PhaseCopying || job.Rows != int64(len(f.rows)) {
		t.Fatalf("start: %+v, %v", job, err)
	}
	p := f.wait(svc, legacy.PhaseVerified, legacy.PhaseFailed)
	if p.Job.Phase != legacy.PhaseVerified || !p.Job.Prepared || p.Job.Copied != int64(len(f.rows)) || p.Job.Report == nil {
		t.Fatalf("job %+v", p.Job)
	}
	for _, mp := range p.Months {
		if mp.Verified != legacy.VerifiedOK || mp.Copied != mp.Rows {
			t.Fatalf("month %+v", mp)
		}
	}
	// Old months got sealed tables; the recent ones are the shard manager's.
	catalog, err := f.shards.Catalog(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range catalog {
		want := shard.Sealed
		switch in.Month {
		case active.Prev():
			want = shard.Prepared
		case active:
			want = shard.Writable
		}
		if in.State != want {
			t.Errorf("month %s is %s, want %s", in.Month, in.State, want)
		}
	}
	if len(catalog) != 6 {
		t.Fatalf("catalog %+v", catalog)
	}
	// Counters continue above the watermark; routes name every legacy month.
	a, err := f.seqs.Allocate(ctx, tenant, seq.Request{Topic: "grp_1", From: 7, ClientMsgID: "new", MsgID: 999})
	if err != nil || a.Seq != 61 {
		t.Fatalf("first seq after the cutover: %+v, %v", a, err)
	}
	rt, found, err := f.routes.Segments(ctx, tenant, "grp_2")
	if err != nil || !found || len(rt) != 6 || rt[0].Month != m0 || rt[5].MaxSeq != 12 {
		t.Fatalf("route of grp_2: %+v, %v, %v", rt, found, err)
	}
	if got := f.metrics.Count("migration_rows_total", "copied"); got != float64(len(f.rows)) {
		t.Fatalf("migration_rows_total{copied} = %v", got)
	}
	for deadline := time.Now().Add(5 * time.Second); f.metrics.Count("migration_state", tenant, string(legacy.PhaseVerified)) != 1; {
		if time.Now().After(deadline) {
			t.Fatal("migration_state{verified} is not 1")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := svc.Finish(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	if st, err := f.legacy.Status(ctx, tenant); err != nil || st.Present || st.Phase != legacy.PhaseFinished {
		t.Fatalf("status after finish %+v, %v", st, err)
	}
	if _, err := svc.Finish(ctx, tenant); err != nil {
		t.Fatalf("finish again: %v", err)
	}
	if _, err := svc.Start(ctx, tenant, false); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("start after finish: %v", err)
	}
}

func TestCommandsRefuseWhatTheJobCannotDo(t *testing.T) {
	cases := []struct {
		name string
		prep func(f *fixture)
		call func(svc *migration.Service) error
		want apperr.Code
	}{
		{"start without dual read", func(f *fixture) { f.deps.DualRead = false }, func(svc *migration.Service) error {
			_, err := svc.Start(context.Background(), tenant, false)
			return err
		}, apperr.Conflict},
		{"start without a legacy table", nil, func(svc *migration.Service) error {
			_, err := svc.Start(context.Background(), "t2", false)
			return err
		}, apperr.NotFound},
		{"pause before a start", nil, func(svc *migration.Service) error {
			_, err := svc.Pause(context.Background(), tenant)
			return err
		}, apperr.Conflict},
		{"resume before a start", nil, func(svc *migration.Service) error {
			_, err := svc.Resume(context.Background(), tenant)
			return err
		}, apperr.Conflict},
		{"verify before a start", nil, func(svc *migration.Service) error {
			_, err := svc.Verify(context.Background(), tenant)
			return err
		}, apperr.Conflict},
		{"start of a paused job", func(f *fixture) {
			if _, err := f.legacy.Cutover(context.Background(), tenant); err != nil {
				f.t.Fatal(err)
			}
			if _, err := f.legacy.SetPhase(context.Background(), tenant, legacy.PhaseChange{From: []legacy.Phase{legacy.PhaseCopying}, To: legacy.PhasePaused}); err != nil {
				f.t.Fatal(err)
			}
		}, func(svc *migration.Service) error {
			_, err := svc.Start(context.Background(), tenant, false)
			return err
		}, apperr.Conflict},
		{"finish before verification", func(f *fixture) {
			if _, err := f.legacy.Cutover(context.Background(), tenant); err != nil {
				f.t.Fatal(err)
			}
		}, func(svc *migration.Service) error {
			_, err := svc.Finish(context.Background(), tenant)
			return err
		}, apperr.Conflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.prep != nil {
				tc.prep(f)
			}
			if err := tc.call(f.service()); apperr.CodeOf(err) != tc.want {
				t.Fatalf("got %v, want code %d", err, tc.want)
			}
		})
	}
}

// slowCopy adds 4,000 rows of grp_3 and paces the copy at two batches a second, so a command
// lands mid-copy.
func (f *fixture) slowCopy() {
	f.cfg.RowsPerSecond = 2 * migration.MinBatchSize // one batch of 1,000 takes half a second
	for i := range 4000 {
		f.rows = append(f.rows, message.Message{
			Topic: "grp_3", Seq: int64(i + 1), MsgID: int64(10_000 + i), From: 7, Type: "text", Status: message.StatusNormal,
			Version: 1, CreatedAt: m0.Start().Add(time.Duration(i) * time.Second),
		})
	}
	f.legacy.Load(tenant, f.rows)
}

// startAndPause starts the job, waits for its first batch and pauses it.
func (f *fixture) startAndPause(svc *migration.Service) legacy.Progress {
	f.t.Helper()
	ctx := context.Background()
	if _, err := svc.Start(ctx, tenant, false); err != nil {
		f.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := svc.Status(ctx, tenant)
		if err != nil {
			f.t.Fatal(err)
		}
		if p.Job.Batches > 0 {
			break
		}
		if time.Now().After(deadline) {
			f.t.Fatal("no batch copied")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := svc.Pause(ctx, tenant); err != nil {
		f.t.Fatal(err)
	}
	return f.wait(svc, legacy.PhasePaused)
}

func TestPauseHoldsTheCursorAndResumeContinues(t *testing.T) {
	f := newFixture(t)
	f.slowCopy()
	ctx := context.Background()
	svc := f.service()
	f.run(svc)
	paused := f.startAndPause(svc)
	// The runner saw the pause and ended (its lease dropped): nothing can move the cursor now.
	for deadline := time.Now().Add(10 * time.Second); f.legacy.Leased(tenant); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the runner kept its lease after the pause")
		}
	}
	still := f.wait(svc, legacy.PhasePaused)
	if still.Job.Cursor != paused.Job.Cursor || still.Job.Remaining() == 0 {
		t.Fatalf("cursor moved while paused: %+v → %+v", paused.Job.Cursor, still.Job.Cursor)
	}
	if _, err := svc.Resume(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	p := f.wait(svc, legacy.PhaseVerified, legacy.PhaseFailed)
	if p.Job.Phase != legacy.PhaseVerified || p.Job.Copied != int64(len(f.rows)) {
		t.Fatalf("after resume %+v", p.Job)
	}
}

// TestRowsCounterCountsTheJob: migration_rows_total of a process that takes a job over starts
// at the rows the job has already handled, so it counts the job rather than the process.
func TestRowsCounterCountsTheJob(t *testing.T) {
	f := newFixture(t)
	f.slowCopy()
	ctx, stop := context.WithCancel(context.Background())
	first := f.service()
	done := make(chan struct{})
	go func() {
		defer close(done)
		first.Run(ctx, func() []string { return []string{tenant} })
	}()
	paused := f.startAndPause(first)
	stop()
	<-done
	if got := f.metrics.Count("migration_rows_total", "copied"); got != float64(paused.Job.Copied) || got == 0 {
		t.Fatalf("first process: migration_rows_total{copied} = %v, the job copied %d", got, paused.Job.Copied)
	}

	// The next process, with its own registry, resumes the job.
	next := memory.NewMetrics()
	f.deps.Metrics = next
	svc := f.service()
	f.run(svc)
	if _, err := svc.Resume(context.Background(), tenant); err != nil {
		t.Fatal(err)
	}
	p := f.wait(svc, legacy.PhaseVerified, legacy.PhaseFailed)
	if got := next.Count("migration_rows_total", "copied"); p.Job.Copied != int64(len(f.rows)) || got != float64(len(f.rows)) {
		t.Fatalf("next process: migration_rows_total{copied} = %v, the job copied %d of %d", got, p.Job.Copied, len(f.rows))
	}
}

func TestMismatchFailsTheJobWithAReport(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	svc := f.service()
	f.run(svc)
	if _, err := svc.Start(ctx, tenant, false); err != nil {
		t.Fatal(err)
	}
	f.wait(svc, legacy.PhaseVerified)
	f.legacy.Remove(tenant, "grp_1", 25) // written after the cutover: the month table has an extra row
	if _, err := svc.Verify(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	p := f.wait(svc, legacy.PhaseFailed)
	want := legacy.Mismatch{Topic: "grp_1", Month: m0.Add(2), Kind: legacy.Extra, FromSeq: 25, ToSeq: 25, Rows: 1}
	if p.Job.Report == nil || !slices.Contains(p.Job.Report.Mismatches, want) {
		t.Fatalf("report %+v, want %+v", p.Job.Report, want)
	}
	if got := f.metrics.Count("migration_verify_mismatches_total"); got < 1 {
		t.Fatalf("migration_verify_mismatches_total = %v", got)
	}
	if _, err := svc.Finish(ctx, tenant); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("finish after a mismatch: %v", err)
	}
}

// failingStore fails every copy batch.
type failingStore struct{ ports.MigrationStore }

func (failingStore) CopyBatch(context.Context, string, int) (legacy.Batch, error) {
	return legacy.Batch{}, errors.New("disk full")
}

func TestRepeatedErrorsFailTheJob(t *testing.T) {
	f := newFixture(t)
	f.deps.Store = failingStore{f.legacy}
	ctx := context.Background()
	svc := f.service()
	f.run(svc)
	if _, err := svc.Start(ctx, tenant, false); err != nil {
		t.Fatal(err)
	}
	p := f.wait(svc, legacy.PhaseFailed)
	if p.Job.Error == "" {
		t.Fatalf("failed job without an error: %+v", p.Job)
	}
	// Resume goes back to copying where the copy stopped.
	if j, err := svc.Resume(ctx, tenant); err != nil || j.Phase != legacy.PhaseCopying {
		t.Fatalf("resume: %+v, %v", j, err)
	}
}

func TestRerunCopiesNothingTwice(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	svc := f.service()
	f.run(svc)
	if _, err := svc.Start(ctx, tenant, false); err != nil {
		t.Fatal(err)
	}
	f.wait(svc, legacy.PhaseVerified)
	if _, err := svc.Start(ctx, tenant, true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := svc.Status(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		if p.Job.Run == 2 && p.Job.Phase == legacy.PhaseVerified {
			if p.Job.Copied != 0 || p.Job.Skipped != int64(len(f.rows)) {
				t.Fatalf("rerun %+v", p.Job)
			}
			// The rerun's rows add to the first run's: the counter never goes down.
			for status, want := range map[string]int{"copied": len(f.rows), "skipped": len(f.rows)} {
				if got := f.metrics.Count("migration_rows_total", status); got != float64(want) {
					t.Errorf("migration_rows_total{%s} = %v, want %d", status, got, want)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rerun not verified: %+v", p.Job)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPlanWarnsOfMsgIDsFromTheFuture(t *testing.T) {
	f := newFixture(t)
	ahead := f.rows[0]
	ahead.MsgID, ahead.Seq = (active.End().AddDate(1, 0, 0).UnixMilli())<<22, 1000 // memory ids: unix ms << 22
	f.legacy.Load(tenant, []message.Message{ahead})
	plan, err := f.service().Plan(context.Background(), tenant)
	if err != nil || len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0], "refuse to start") {
		t.Fatalf("plan %+v, %v", plan, err)
	}
}

// TestATenantProvisionedWhileRunningGetsItsJobRun: the supervisor reads the tenants at every
// pass, so a job started for a tenant provisioned after it began is copied without a restart.
func TestATenantProvisionedWhileRunningGetsItsJobRun(t *testing.T) {
	f := newFixture(t)
	svc := f.service()
	var mu sync.Mutex
	served := []string{}
	f.runFor(svc, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(served)
	})
	mu.Lock()
	served = append(served, tenant)
	mu.Unlock()
	if _, err := svc.Start(context.Background(), tenant, false); err != nil {
		t.Fatal(err)
	}
	if p := f.wait(svc, legacy.PhaseVerified, legacy.PhaseFailed); p.Job.Phase != legacy.PhaseVerified || p.Job.Copied != int64(len(f.rows)) {
		t.Fatalf("job of the tenant provisioned while running: %+v", p.Job)
	}
}

// heldRows is a migration store whose first LegacyRows stops after hold rows until release
// is closed, so a test sees a month's verification half way.
type heldRows struct {
	ports.MigrationStore
	hold    int
	once    sync.Once
	held    chan struct{} // closed once hold rows were read
	release chan struct{}
}

func (h *heldRows) LegacyRows(ctx context.Context, tenant string, m month.Month) iter.Seq2[legacy.Row, error] {
	first := false
	h.once.Do(func() { first = true })
	rows := h.MigrationStore.LegacyRows(ctx, tenant, m)
	if !first {
		return rows
	}
	return func(yield func(legacy.Row, error) bool) {
		n := 0
		for row, err := range rows {
			if n == h.hold {
				close(h.held)
				<-h.release
			}
			n++
			if !yield(row, err) {
				return
			}
		}
	}
}

// TestStatusShowsTheRowsVerifiedSoFar: while a month is compared, the status says which one
// and how many of its legacy rows were compared, so imctl shows verification row by row.
func TestStatusShowsTheRowsVerifiedSoFar(t *testing.T) {
	f := newFixture(t)
	held := &heldRows{MigrationStore: f.deps.Store, hold: 5, held: make(chan struct{}), release: make(chan struct{})}
	f.deps.Store = held
	svc := f.service()
	f.run(svc)
	ctx := context.Background()
	if _, err := svc.Start(ctx, tenant, false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.held:
	case <-time.After(10 * time.Second):
		t.Fatal("no month was verified")
	}
	p, err := svc.Status(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if p.Verifying == nil || p.Verifying.Rows != 5 || p.Verifying.Month < m0 || p.Verifying.Month > active {
		t.Fatalf("verifying %+v while the fifth row is compared", p.Verifying)
	}
	close(held.release)
	if p := f.wait(svc, legacy.PhaseVerified, legacy.PhaseFailed); p.Job.Phase != legacy.PhaseVerified || p.Verifying != nil {
		t.Fatalf("after verification: %s, verifying %+v", p.Job.Phase, p.Verifying)
	}
}

// Step runs the job pass by pass without the supervisor: prepare and copy, the copy's end,
// verification, then nothing more.
func TestStepRunsOnePassAtATime(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	svc := f.service()
	if more, err := svc.Step(ctx, tenant); more || err != nil {
		t.Fatalf("step before start: more %v, %v", more, err)
	}
	if _, err := svc.Start(ctx, tenant, false); err != nil {
		t.Fatal(err)
	}
	for i, want := range []legacy.Phase{legacy.PhaseCopying, legacy.PhaseVerifying, legacy.PhaseVerified} {
		more, err := svc.Step(ctx, tenant)
		if err != nil || more != (want != legacy.PhaseVerified) {
			t.Fatalf("pass %d: more %v, %v", i, more, err)
		}
		job, err := f.legacy.Job(ctx, tenant)
		if err != nil || job.Phase != want {
			t.Fatalf("after pass %d the job is %+v, %v; want %s", i, job, err, want)
		}
		if i == 0 && (!job.Prepared || job.Copied != int64(len(f.rows))) {
			t.Fatalf("first pass did not prepare and copy: %+v", job)
		}
	}
	if more, err := svc.Step(ctx, tenant); more || err != nil {
		t.Fatalf("step after verification: more %v, %v", more, err)
	}
}
