package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/adapters/mysql/legacygen"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/loop/migration"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/store/dualread"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

// The migration job against the real MariaDB (seed 000 §9, §12 item 12): the MySQL adapters
// of both ports, the core job and dual read over them, and in-memory stand-ins for Redis.

// migrationRows is the legacy size of the tests: IMD_MIGRATION_ROWS raises it (the acceptance
// size is 100,000; the default keeps `go test ./...` quick).
func migrationRows(t testing.TB, def int) int {
	if v := os.Getenv("IMD_MIGRATION_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("IMD_MIGRATION_ROWS=%q: want a positive number", v)
		}
		return n
	}
	return def
}

type migFixture struct {
	t       testing.TB
	c       *Cluster
	tenant  string
	db      *sql.DB
	shards  *ShardStore
	store   *MessageStore
	jobs    *Migrations
	months  *memory.MonthState
	seqs    *memory.SeqAllocator
	routes  *memory.RouteCache
	dual    *dualread.Store
	editor  *dualread.Editor
	history *history.Service
	metrics *memory.Metrics
	cfg     migration.Config
	gen     legacygen.Summary
	active  month.Month
	ids     atomic.Int64
}

func newMigFixture(t testing.TB, spec legacygen.Spec, cfg migration.Config) *migFixture {
	t.Helper()
	c, tenant := newTestCluster(t)
	ctx := context.Background()
	f := &migFixture{t: t, c: c, tenant: tenant, db: rawDB(t, c, tenant), shards: NewShardStore(c),
		jobs: NewMigrations(c), metrics: memory.NewMetrics(), cfg: cfg, routes: memory.NewRouteCache()}
	f.store = NewMessageStore(c, MessageStoreOptions{})
	t.Cleanup(func() { f.store.Close() })
	now := time.Now().UTC()
	f.active = month.Of(now)
	clock := memory.NewClock(now)
	f.months = memory.NewMonthState(clock.Now)
	f.seqs = memory.NewSeqAllocator(f.months, clock.Now)
	for _, m := range []month.Month{f.active, f.active.Next()} {
		if err := f.shards.EnsureTable(ctx, tenant, m); err != nil {
			t.Fatal(err)
		}
		if err := f.months.MarkReady(ctx, tenant, 0, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.shards.SetState(ctx, tenant, f.active, shard.Prepared, shard.Writable); err != nil {
		t.Fatal(err)
	}
	if _, err := f.months.Advance(ctx, tenant, 0, f.active); err != nil {
		t.Fatal(err)
	}
	spec.End = now.Add(-time.Minute)
	spec.IDs = memory.NewIDs(wallClock{})
	var err error
	if f.gen, err = legacygen.Generate(ctx, f.db, spec); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The status cache runs on the real clock (the month clock above stands still).
	src := dualread.NewSource(NewLegacy(c), wallClock{}, time.Nanosecond, log)
	f.dual = dualread.NewStore(f.store, src)
	f.editor = dualread.NewEditor(NewMessageEditor(c), src, f.jobs)
	f.history = history.New(history.Deps{
		Store: f.dual, Routes: f.routes, Months: f.months, Metrics: f.metrics, Log: log,
		Search: dualread.NewSearch(f.store, src),
	})
	return f
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// service is one process's migration service; run starts its supervisor until the returned
// stop is called.
func (f *migFixture) service() *migration.Service {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	repair := routerepair.New(routerepair.Config{}, routerepair.Deps{
		Queue: memory.NewRepairQueue(), Store: f.dual, Mirror: NewRouteMirror(f.c), Routes: f.routes,
		Months: f.months, Metrics: f.metrics, Log: log,
	})
	return migration.New(f.cfg, migration.Deps{
		Store: f.jobs, Shards: f.shards, Months: f.months, Seq: f.seqs, Routes: repair,
		Metrics: f.metrics, IDs: memory.NewIDs(wallClock{}), Clock: wallClock{}, Log: log, DualRead: true,
	})
}

func run(svc *migration.Service, tenant string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.Run(ctx, func() []string { return []string{tenant} })
	}()
	return func() { cancel(); <-done }
}

// waitFor polls the job until cond holds.
func (f *migFixture) waitFor(what string, limit time.Duration, cond func(legacy.Progress) bool) legacy.Progress {
	f.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		p, err := f.jobs.Progress(context.Background(), f.tenant)
		if err != nil {
			f.t.Fatal(err)
		}
		if cond(p) {
			return p
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: not within %v; job %+v", what, limit, p.Job)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func phaseIs(ps ...legacy.Phase) func(legacy.Progress) bool {
	return func(p legacy.Progress) bool { return slices.Contains(ps, p.Job.Phase) }
}

// send stores one message the way the send path does: a seq from the counter (re-seeded from
// the store's MaxSeq when missing), the month table, then the Redis route.
func (f *migFixture) send(topicName string, from int64, text string) message.Message {
	f.t.Helper()
	ctx := context.Background()
	id := 1<<62 + f.ids.Add(1)
	req := seq.Request{Topic: topicName, From: from, ClientMsgID: fmt.Sprintf("live-%d", id), MsgID: id, Hash: "h"}
	alloc, err := f.seqs.Allocate(ctx, f.tenant, req)
	if errors.Is(err, seq.ErrCounterMissing) {
		floor, err := f.dual.MaxSeq(ctx, f.tenant, topicName)
		if err != nil {
			f.t.Fatal(err)
		}
		if err := f.seqs.Reseed(ctx, f.tenant, topicName, floor); err != nil {
			f.t.Fatal(err)
		}
		alloc, err = f.seqs.Allocate(ctx, f.tenant, req)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	m := message.Message{
		Topic: topicName, Seq: alloc.Seq, MsgID: id, From: from, ClientMsgID: req.ClientMsgID, Type: "text",
		Content: []byte(fmt.Sprintf(`{"text":%q}`, text)), Status: message.StatusNormal, Version: 1,
		CreatedAt: time.Now().UTC(), Month: alloc.Month,
	}
	if _, err := f.store.Append(ctx, f.tenant, m, "h"); err != nil {
		f.t.Fatalf("append %s seq %d: %v", topicName, m.Seq, err)
	}
	seg := ports.RouteUpdate{Topic: topicName}
	seg.Segment.Month, seg.Segment.MinSeq, seg.Segment.MaxSeq, seg.Segment.Count = m.Month, m.Seq, m.Seq, 1
	seg.Segment.MinCreatedAt, seg.Segment.MaxCreatedAt = m.CreatedAt, m.CreatedAt
	if err := f.routes.Apply(ctx, f.tenant, []ports.RouteUpdate{seg}); err != nil {
		f.t.Fatal(err)
	}
	return m
}

// sample picks topics of every kind: the busiest groups, quiet ones, P2P pairs.
func (f *migFixture) sample() []legacygen.Topic {
	ts := f.gen.Topics
	groups, pairs := ts[:len(ts)-countPairs(ts)], ts[len(ts)-countPairs(ts):]
	out := []legacygen.Topic{groups[0], groups[1], groups[len(groups)/2], groups[len(groups)-1]}
	if len(pairs) > 0 {
		out = append(out, pairs[0], pairs[len(pairs)-1])
	}
	return out
}

func countPairs(ts []legacygen.Topic) int {
	n := 0
	for _, t := range ts {
		if t.GroupID == 0 {
			n++
		}
	}
	return n
}

// view renders what every query path answers for a topic, limited to seqs ≤ upTo (the legacy
// part; live sends add above it): full forward sync, full backward history, exact gets,
// context and a topic search. Equal views mean equal answers.
func (f *migFixture) view(t legacygen.Topic, upTo int64) string {
	f.t.Helper()
	ctx := context.Background()
	var b strings.Builder
	line := func(m message.Message) {
		if m.Seq <= upTo {
			sum := sha256.Sum256(m.Content)
			fmt.Fprintf(&b, " %d/%d/%s/%d/%s/%s", m.Seq, m.MsgID, m.Status, m.Version, m.CreatedAt.Format(time.RFC3339Nano), hex.EncodeToString(sum[:6]))
		}
	}
	b.WriteString("sync:")
	var seqs []int64
	for since := int64(0); ; {
		r, err := f.history.Sync(ctx, history.SyncRequest{Tenant: f.tenant, Topic: t.Name, Since: since, Limit: 200})
		if err != nil {
			f.t.Fatalf("sync %s: %v", t.Name, err)
		}
		for _, m := range r.Messages {
			line(m)
			seqs = append(seqs, m.Seq)
		}
		if !r.HasMore {
			break
		}
		since = r.LastSeq
	}
	for i := range seqs {
		if seqs[i] != int64(i+1) {
			f.t.Fatalf("sync %s: seq %d at position %d: a seq is missing or duplicated", t.Name, seqs[i], i)
		}
	}
	b.WriteString("\nhistory:")
	for before := int64(0); ; {
		page, err := f.history.History(ctx, history.HistoryRequest{Tenant: f.tenant, Topic: t.Name, Before: before, Limit: 50})
		if err != nil {
			f.t.Fatalf("history %s: %v", t.Name, err)
		}
		for _, m := range page {
			line(m)
		}
		if len(page) < 50 {
			break
		}
		before = page[len(page)-1].Seq
	}
	b.WriteString("\nget:")
	for _, sq := range []int64{1, (t.MaxSeq + 1) / 2, t.MaxSeq} {
		m, err := f.history.Get(ctx, f.tenant, 0, t.Name, sq)
		switch {
		case err == nil:
			line(m)
		case apperr.CodeOf(err) == apperr.NotFound:
			fmt.Fprintf(&b, " %d/none", sq)
		default:
			f.t.Fatalf("get %s seq %d: %v", t.Name, sq, err)
		}
	}
	b.WriteString("\ncontext:")
	msgs, err := f.history.Context(ctx, history.ContextRequest{Tenant: f.tenant, Topic: t.Name, Seq: (t.MaxSeq + 1) / 2, N: 5})
	if err != nil && apperr.CodeOf(err) != apperr.NotFound {
		f.t.Fatalf("context %s: %v", t.Name, err)
	}
	for _, m := range msgs {
		line(m)
	}
	b.WriteString("\nsearch:")
	to := f.gen.To.Add(time.Millisecond)
	found, err := f.history.Search(ctx, history.SearchRequest{Tenant: f.tenant, Topic: t.Name, Text: "收到", From: month.Of(to).Add(-2).Start(), To: to, Limit: 50})
	if err != nil {
		f.t.Fatalf("search %s: %v", t.Name, err)
	}
	for _, m := range found {
		line(m)
	}
	return b.String()
}

func (f *migFixture) views() map[string]string {
	out := make(map[string]string)
	for _, t := range f.sample() {
		out[t.Name] = f.view(t, t.MaxSeq)
	}
	return out
}

func (f *migFixture) sameViews(when string, want map[string]string) {
	f.t.Helper()
	for _, t := range f.sample() {
		if got := f.view(t, t.MaxSeq); got != want[t.Name] {
			f.t.Fatalf("%s: %s reads differently than before the migration:\nbefore %.600s\nnow    %.600s", when, t.Name, want[t.Name], got)
		}
	}
}

// TestMigrationCopiesWhileServing is seed 000 §12 item 12 below the transport: the legacy table
// is copied while messages keep arriving on legacy topics and every query path is read over
// and over; the copy pauses and resumes half way; every read before, during and after equals
// the first, new seqs continue the legacy ones without a gap, and finish retires the table.
func TestMigrationCopiesWhileServing(t *testing.T) {
	rows := migrationRows(t, 20_000)
	f := newMigFixture(t, legacygen.Spec{Rows: rows, Groups: 80, Pairs: 20, DellogRanges: 50},
		migration.Config{BatchSize: 1000, RowsPerSecond: max(rows/4, 2000), PollInterval: 50 * time.Millisecond})
	ctx := context.Background()
	before := f.views()
	// A message recalled through imd after the cutover but before its copy: copied first,
	// changed in the month table, accepted by verification as a later version.
	recallTopic := f.sample()[1]

	stop := run(f.service(), f.tenant)
	defer stop()
	svc := f.service()
	if _, err := svc.Start(ctx, f.tenant, false); err != nil {
		t.Fatal(err)
	}
	f.waitFor("prepared", 30*time.Second, func(p legacy.Progress) bool { return p.Job.Prepared })
	recallAt := recallTopic.MaxSeq // the newest row, copied last
	m, err := f.history.Locate(ctx, f.tenant, recallTopic.Name, recallAt)
	if err != nil {
		t.Fatal(err)
	}
	recalled, err := f.editor.Modify(ctx, f.tenant, m, recallTopic.Name, recallAt, func(cur message.Message) (message.Revision, error) {
		next := cur
		next.Status, next.Content, next.Version = message.StatusRecalled, nil, cur.Version+1
		return message.Revision{Action: message.ActionRecall, Editor: cur.From, At: time.Now().UTC(), Message: next}, nil
	})
	if err != nil {
		t.Fatalf("recall a legacy message not copied yet: %v", err)
	}
	if recalled.Status != message.StatusRecalled {
		t.Fatalf("recalled message is %s", recalled.Status)
	}
	before = f.views() // the recall is part of every later read

	// Live traffic on two legacy topics while the copy runs.
	live := []legacygen.Topic{f.sample()[0], f.sample()[4]}
	var sent sync.Map // topic → []int64 seqs
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	var traffic sync.WaitGroup
	for _, lt := range live {
		traffic.Go(func() {
			var seqs []int64
			for i := 0; trafficCtx.Err() == nil; i++ {
				seqs = append(seqs, f.send(lt.Name, lt.Members[0], fmt.Sprintf("live %d", i)).Seq)
				sent.Store(lt.Name, slices.Clone(seqs))
				time.Sleep(5 * time.Millisecond)
			}
		})
	}

	f.waitFor("a third copied", time.Minute, func(p legacy.Progress) bool { return p.Job.Copied+p.Job.Skipped > int64(rows)/3 })
	if _, err := svc.Pause(ctx, f.tenant); err != nil {
		t.Fatal(err)
	}
	paused := f.waitFor("paused", 10*time.Second, phaseIs(legacy.PhasePaused))
	f.sameViews("paused half way", before)
	// The barrier: the runner holds the lease while it copies and lets go once it sees the
	// pause; a paused job starts no other. Once the lease is free, nothing copies any more.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		release, ok, err := f.jobs.Lease(ctx, f.tenant)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the runner kept the lease of a paused job")
		}
	}
	if again := f.waitFor("still paused", time.Second, phaseIs(legacy.PhasePaused)); again.Job.Cursor != paused.Job.Cursor {
		t.Fatalf("the copy moved while paused: %+v → %+v", paused.Job.Cursor, again.Job.Cursor)
	}
	if _, err := svc.Resume(ctx, f.tenant); err != nil {
		t.Fatal(err)
	}
	f.sameViews("resumed", before)
	done := f.waitFor("verified", 2*time.Minute, phaseIs(legacy.PhaseVerified, legacy.PhaseFailed))
	stopTraffic()
	traffic.Wait()
	if done.Job.Phase != legacy.PhaseVerified {
		t.Fatalf("job %s: %s", done.Job.Phase, done.Job.Error)
	}
	f.sameViews("verified", before)
	if _, err := svc.Finish(ctx, f.tenant); err != nil {
		t.Fatal(err)
	}
	f.sameViews("finished", before)

	// The job's account: every legacy row copied once (the recalled one ahead of the batch).
	j := done.Job
	if j.Copied+j.Skipped != int64(rows) || j.Failed != 0 || j.Skipped != 1 {
		t.Fatalf("copied %d skipped %d failed %d of %d", j.Copied, j.Skipped, j.Failed, rows)
	}
	if j.Report == nil || j.Report.Rows != int64(rows) {
		t.Fatalf("verification report %+v", j.Report)
	}
	// New seqs continue each legacy topic without a gap, and read back after the legacy ones.
	for _, lt := range live {
		v, _ := sent.Load(lt.Name)
		seqs := v.([]int64)
		if len(seqs) == 0 || seqs[0] != lt.MaxSeq+1 || seqs[len(seqs)-1] != lt.MaxSeq+int64(len(seqs)) {
			t.Fatalf("%s: legacy max %d, live seqs %v…", lt.Name, lt.MaxSeq, seqs[:min(5, len(seqs))])
		}
		f.view(legacygen.Topic{Name: lt.Name, MaxSeq: lt.MaxSeq + int64(len(seqs))}, 0) // checks 1..max without a gap
	}
	// The legacy table is kept under its new name, and nothing reads it any more.
	for name, want := range map[string]bool{legacy.Table: false, legacy.RetiredTable: true} {
		if got, err := tableExists(ctx, f.db, name); err != nil || got != want {
			t.Fatalf("table %s exists %v (%v), want %v", name, got, err, want)
		}
	}
	st, err := NewLegacy(f.c).Status(ctx, f.tenant)
	if err != nil || st.DualRead() {
		t.Fatalf("status after finish %+v (%v)", st, err)
	}
	if got := f.metrics.Count("migration_rows_total", "copied"); got != float64(j.Copied) {
		t.Fatalf("migration_rows_total{copied} = %v, want %d", got, j.Copied)
	}
}

// TestMigrationCrashMidBatchAndRerunAreIdempotent: a batch that dies between its inserts and its
// commit leaves nothing behind; another process continues at the recorded cursor; a rerun from
// the first row copies nothing twice.
func TestMigrationCrashMidBatchAndRerunAreIdempotent(t *testing.T) {
	rows := migrationRows(t, 10_000)
	f := newMigFixture(t, legacygen.Spec{Rows: rows, Groups: 40, Pairs: 10},
		migration.Config{BatchSize: 1000, RowsPerSecond: -1, PollInterval: 50 * time.Millisecond})
	ctx := context.Background()
	first := f.service()
	if _, err := first.Start(ctx, f.tenant, false); err != nil {
		t.Fatal(err)
	}
	stop := run(first, f.tenant)
	f.waitFor("some batches", time.Minute, func(p legacy.Progress) bool { return p.Job.Batches >= 2 })
	if _, err := first.Pause(ctx, f.tenant); err != nil {
		t.Fatal(err)
	}
	f.waitFor("paused", 10*time.Second, phaseIs(legacy.PhasePaused))
	stop()

	// The next batch blocks on a month's progress row after its inserts; the process "dies".
	before, err := f.jobs.Progress(ctx, f.tenant)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Resume(ctx, f.tenant); err != nil {
		t.Fatal(err)
	}
	next := month.Of(before.Job.Cursor.CreatedAt).String()
	blocker, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blocker.ExecContext(ctx, "SELECT * FROM im_migration_months WHERE shard_month = ? FOR UPDATE", next); err != nil {
		t.Fatal(err)
	}
	crashCtx, crash := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = f.jobs.CopyBatch(crashCtx, f.tenant, 1000)
	crash()
	blocker.Rollback()
	if err == nil {
		t.Fatal("the blocked batch committed")
	}
	after, err := f.jobs.Progress(ctx, f.tenant)
	if err != nil {
		t.Fatal(err)
	}
	if after.Job.Cursor != before.Job.Cursor || after.Job.Copied != before.Job.Copied {
		t.Fatalf("the dead batch moved the job: %+v → %+v", before.Job, after.Job)
	}
	if got := f.monthTableRows(); got != before.Job.Copied {
		t.Fatalf("month tables hold %d rows after the dead batch, the job copied %d", got, before.Job.Copied)
	}

	// Another process takes over at the cursor.
	stop = run(f.service(), f.tenant)
	done := f.waitFor("verified", 2*time.Minute, phaseIs(legacy.PhaseVerified, legacy.PhaseFailed))
	stop()
	if done.Job.Phase != legacy.PhaseVerified || done.Job.Copied != int64(rows) || done.Job.Skipped != 0 {
		t.Fatalf("after the takeover: %+v", done.Job)
	}

	// A rerun from the first row finds every row copied.
	svc := f.service()
	if _, err := svc.Start(ctx, f.tenant, true); err != nil {
		t.Fatal(err)
	}
	stop = run(svc, f.tenant)
	defer stop()
	again := f.waitFor("verified again", 2*time.Minute, func(p legacy.Progress) bool {
		return p.Job.Run == 2 && slices.Contains([]legacy.Phase{legacy.PhaseVerified, legacy.PhaseFailed}, p.Job.Phase)
	})
	if again.Job.Phase != legacy.PhaseVerified || again.Job.Copied != 0 || again.Job.Skipped != int64(rows) {
		t.Fatalf("rerun: %+v", again.Job)
	}
	if got := f.monthTableRows(); got != int64(rows) {
		t.Fatalf("month tables hold %d rows, the legacy table %d", got, rows)
	}
	for _, mp := range again.Months {
		if mp.Skipped != mp.Rows || mp.Verified != legacy.VerifiedOK {
			t.Fatalf("month %s after the rerun: %+v", mp.Month, mp)
		}
	}
	// The mirror counts every copied row once, whatever ran twice.
	var mirrored int64
	if err := f.db.QueryRowContext(ctx, "SELECT CAST(COALESCE(SUM(message_count), 0) AS SIGNED) FROM im_group_message_topic_shards").Scan(&mirrored); err != nil {
		t.Fatal(err)
	}
	if mirrored != int64(rows) {
		t.Fatalf("route mirror counts %d rows, want %d", mirrored, rows)
	}
}

// monthTableRows counts the rows of every month table.
func (f *migFixture) monthTableRows() int64 {
	f.t.Helper()
	ctx := context.Background()
	catalog, err := f.shards.Catalog(ctx, f.tenant)
	if err != nil {
		f.t.Fatal(err)
	}
	var total int64
	for _, in := range catalog {
		var n int64
		if err := f.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+in.Table).Scan(&n); err != nil {
			f.t.Fatal(err)
		}
		total += n
	}
	return total
}

// TestMigrationVerifyNamesWhatDiffers: after a clean copy, each kind of damage makes
// verification fail the job with a report naming the topic, the month and the seq range, and
// finish is refused.
func TestMigrationVerifyNamesWhatDiffers(t *testing.T) {
	cases := []struct {
		name   string
		damage func(f *migFixture, topic string, m month.Month, sq int64) error
		kind   legacy.MismatchKind
	}{
		{"content changed in the month table", func(f *migFixture, topic string, m month.Month, sq int64) error {
			_, err := f.db.Exec("UPDATE im_group_messages_"+m.String()+` SET content = '{"text":"tampered"}' WHERE topic = ? AND seqid = ?`, topic, sq)
			return err
		}, legacy.Differs},
		{"row lost from the month table", func(f *migFixture, topic string, m month.Month, sq int64) error {
			_, err := f.db.Exec("DELETE FROM im_group_messages_"+m.String()+" WHERE topic = ? AND seqid = ?", topic, sq)
			return err
		}, legacy.Missing},
		{"legacy row removed after the cutover", func(f *migFixture, topic string, _ month.Month, sq int64) error {
			_, err := f.db.Exec("DELETE FROM im_group_messages WHERE topic = ? AND seqid = ?", topic, sq)
			return err
		}, legacy.Extra},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newMigFixture(t, legacygen.Spec{Rows: 3000, Groups: 12, Pairs: 3},
				migration.Config{BatchSize: 1000, RowsPerSecond: -1, PollInterval: 50 * time.Millisecond})
			ctx := context.Background()
			svc := f.service()
			stop := run(svc, f.tenant)
			defer stop()
			if _, err := svc.Start(ctx, f.tenant, false); err != nil {
				t.Fatal(err)
			}
			f.waitFor("verified", time.Minute, phaseIs(legacy.PhaseVerified))
			victim := f.gen.Topics[2]
			sq := victim.MaxSeq / 2
			var created time.Time
			if err := f.db.QueryRow("SELECT created_at FROM im_group_messages WHERE topic = ? AND seqid = ?", victim.Name, sq).Scan(&created); err != nil {
				t.Fatal(err)
			}
			m := month.Of(created)
			if err := tc.damage(f, victim.Name, m, sq); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Verify(ctx, f.tenant); err != nil {
				t.Fatal(err)
			}
			p := f.waitFor("failed", time.Minute, phaseIs(legacy.PhaseFailed, legacy.PhaseVerified))
			if p.Job.Phase != legacy.PhaseFailed || p.Job.Report == nil {
				t.Fatalf("verification passed over the damage: %+v", p.Job)
			}
			want := legacy.Mismatch{Topic: victim.Name, Month: m, Kind: tc.kind, FromSeq: sq, ToSeq: sq, Rows: 1}
			if !slices.Contains(p.Job.Report.Mismatches, want) {
				t.Fatalf("report %+v does not name %+v", p.Job.Report.Mismatches, want)
			}
			if !strings.Contains(p.Job.Error, victim.Name) || !strings.Contains(p.Job.Error, fmt.Sprintf("seq %d-%d", sq, sq)) {
				t.Fatalf("job error %q does not name the topic and seq range", p.Job.Error)
			}
			for _, mp := range p.Months {
				if mp.Month == m && mp.Verified != legacy.Mismatched {
					t.Fatalf("month %s verified %q", m, mp.Verified)
				}
			}
			if _, err := svc.Finish(ctx, f.tenant); apperr.CodeOf(err) != apperr.Conflict {
				t.Fatalf("finish after a mismatch: %v", err)
			}
		})
	}
}
