package archiver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/kit/jobs"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/archivereader"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/archiver"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

const (
	tenant = "t1"
	member = int64(2)
)

// m0 is archived in the tests (seqs 1-30 of the group, 1-5 of a second group); m1 holds seqs
// 31-60 and m2 is the active month.
var (
	m0 = month.Month(203101)
	m1 = month.Month(203102)
	m2 = month.Month(203103)
)

type fixture struct {
	t        *testing.T
	shards   *memory.ShardStore
	store    *memory.MessageStore
	rows     *memory.MonthRows
	routes   *memory.RouteCache
	blobs    *memory.BlobStore
	queue    *memory.DeliverQueue
	refs     *memory.References
	dellog   *memory.DeleteLog
	repairs  *backlog
	states   *archivereader.States
	archiver *archiver.Service
	history  *history.Service
	topic    string
	other    string
	lastID   int64
}

type backlog struct{ pending bool }

func (b *backlog) Pending(context.Context, string, month.Month) (bool, error) { return b.pending, nil }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(m2.Start().Add(20 * 24 * time.Hour))
	f := &fixture{
		t: t, shards: memory.NewShardStore(), routes: memory.NewRouteCache(), blobs: memory.NewBlobStore(),
		queue: memory.NewDeliverQueue(clock.Now), refs: memory.NewReferences(), repairs: &backlog{},
	}
	f.store = memory.NewMessageStore(f.shards)
	f.rows = memory.NewMonthRows(f.shards)
	f.dellog = memory.NewDeleteLog(f.shards)
	months := memory.NewMonthState(clock.Now)
	for _, m := range []month.Month{m0, m1, m2} {
		if err := f.shards.EnsureTable(ctx, tenant, m); err != nil {
			t.Fatal(err)
		}
		if err := months.MarkReady(ctx, tenant, 0, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := months.Advance(ctx, tenant, 0, m2); err != nil {
		t.Fatal(err)
	}
	dir := memory.NewDirectory()
	conv, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 500, []int64{member}, 0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 11, Owner: 1}, 501, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.topic, f.other = conv.Topic, other.Topic
	for s := int64(1); s <= 60; s++ {
		m := m0
		if s > 30 {
			m = m1
		}
		f.append(f.topic, s, m)
	}
	for s := int64(1); s <= 5; s++ {
		f.append(f.other, s, m0)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	metrics := memory.NewMetrics()
	manager := shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{Store: f.shards, Months: months, Metrics: metrics, Log: log})
	if err := manager.Ensure(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	f.seal(m0)
	reader := archivereader.NewReader(archivereader.Config{Chunks: 4}, f.blobs, f.dellog, metrics)
	f.states = archivereader.NewStates(archivereader.Config{StateTTL: time.Hour}, f.shards, clock)
	f.archiver = archiver.New(archiver.Config{ChunkRows: 7}, archiver.Deps{
		Catalog: f.shards, Manager: manager, Rows: f.rows, Mirror: memory.NewRouteMirror(f.shards), Store: f.store,
		Blobs: f.blobs, Reader: reader, States: f.states, Deliveries: f.queue, Repairs: f.repairs, References: f.refs,
		Purged: f.rows, Routes: f.routes, Files: f.refs, Months: months, Locks: memory.NewLocks(clock.Now),
		Clock: clock, Metrics: metrics, Log: log,
	})
	decorated := archivereader.NewStore(f.store, f.store, reader, f.states)
	f.history = history.New(history.Deps{
		Store: decorated, Routes: f.routes, Months: months, Metrics: metrics,
		Resolver: conversation.NewResolver(dir, memory.NewIDs(clock), membership.New(dir, clock, time.Minute)),
		Log:      log, Search: decorated,
	})
	return f
}

func (f *fixture) append(topicName string, s int64, m month.Month) {
	f.t.Helper()
	f.lastID++
	msg := message.Message{
		Topic: topicName, GroupID: 10, ConversationID: 500, Seq: s, MsgID: f.lastID, From: 1,
		ClientMsgID: fmt.Sprintf("c%d", s), Type: "text", Content: json.RawMessage(fmt.Sprintf(`{"text":"Word%d 消息%d"}`, s, s)),
		Mentions: []int64{member}, ReplySeq: max(s-1, 0), Status: message.StatusNormal, Version: 1,
		CreatedAt: m.Start().Add(time.Duration(s) * time.Minute), Month: m,
	}
	if _, err := f.store.Append(context.Background(), tenant, msg, "h"); err != nil {
		f.t.Fatal(err)
	}
}

// seal walks a month to sealed the way the shard manager would.
func (f *fixture) seal(m month.Month) {
	f.t.Helper()
	for _, step := range [][2]shard.State{{shard.Prepared, shard.Writable}, {shard.Writable, shard.Sealing}, {shard.Sealing, shard.Sealed}} {
		if f.state(m) == step[0] {
			if err := f.shards.SetState(context.Background(), tenant, m, step[0], step[1]); err != nil {
				f.t.Fatal(err)
			}
		}
	}
}

func (f *fixture) state(m month.Month) shard.State {
	f.t.Helper()
	infos, err := f.shards.Catalog(context.Background(), tenant)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, in := range infos {
		if in.Month == m {
			return in.State
		}
	}
	return ""
}

// views are every query of core/usecase/history whose answer must not change when m0 is archived.
func (f *fixture) views() map[string]any {
	f.t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	for _, user := range []int64{0, member} {
		for _, since := range []int64{0, 10, 29, 30} {
			r, err := f.history.Sync(ctx, history.SyncRequest{Tenant: tenant, User: user, Topic: f.topic, Since: since, Limit: 25})
			out[fmt.Sprintf("sync user %d since %d", user, since)] = []any{r, err}
		}
		for _, before := range []int64{0, 35, 31, 12} {
			r, err := f.history.History(ctx, history.HistoryRequest{Tenant: tenant, User: user, Topic: f.topic, Before: before, Limit: 20})
			out[fmt.Sprintf("history user %d before %d", user, before)] = []any{r, err}
		}
		for _, seq := range []int64{1, 7, 8, 29, 30, 31, 61} {
			r, err := f.history.Get(ctx, tenant, user, f.topic, seq)
			out[fmt.Sprintf("get user %d seq %d", user, seq)] = []any{r, err}
			c, err := f.history.Context(ctx, history.ContextRequest{Tenant: tenant, User: user, Topic: f.topic, Seq: seq, N: 4})
			out[fmt.Sprintf("context user %d seq %d", user, seq)] = []any{c, err}
		}
	}
	for _, q := range []history.SearchRequest{
		{Tenant: tenant, Text: "Word2", From: m0.Start(), To: m1.End(), Limit: 50},
		{Tenant: tenant, Topic: f.other, Text: "消息", From: m0.Start(), To: m0.End(), Limit: 50},
	} {
		r, err := f.history.Search(ctx, q)
		out[fmt.Sprintf("search %q in %q", q.Text, q.Topic)] = []any{r, err}
	}
	return out
}

func sameViews(t *testing.T, when string, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s: %s changed:\n got %v\nwant %v", when, k, got[k], w)
		}
	}
}

// TestArchiveDropAndReadBack: every history query answers the same before archiving, after
// archiving, and after the month's table is dropped; restore brings the table back with the
// same rows and the same answers.
func TestArchiveDropAndReadBack(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.dellog.HideRange(ctx, tenant, f.topic, member, 5, 9); err != nil {
		t.Fatal(err)
	}
	before := f.views()
	tableBefore, err := f.rows.Rows(ctx, tenant, m0, f.topic, 0, 100)
	if err != nil {
		t.Fatal(err)
	}

	var last jobs.Progress
	man, err := f.archiver.Archive(ctx, tenant, m0, func(p jobs.Progress) { last = p })
	if err != nil {
		t.Fatalf("Archive: %v", err)
	}
	if f.state(m0) != shard.Archived || man.Rows != 35 || len(man.Topics) != 2 || len(man.Topics[0].Chunks) != 5 {
		t.Fatalf("after Archive: state %s, manifest %d rows, %d topics, %+v", f.state(m0), man.Rows, len(man.Topics), man.Topics[0])
	}
	if last.TopicsDone != 2 || last.Rows != 35 || last.Chunks != 6 {
		t.Fatalf("last progress %+v", last)
	}
	sameViews(t, "archived", f.views(), before)

	if err := f.archiver.Drop(ctx, tenant, m0, nil); err != nil {
		t.Fatalf("Drop: %v", err)
	}
	if exists, _ := f.rows.TableExists(ctx, tenant, m0); exists {
		t.Fatal("the table is still there after Drop")
	}
	sameViews(t, "dropped", f.views(), before)
	if err := f.archiver.Drop(ctx, tenant, m0, nil); err != nil {
		t.Fatalf("a second Drop: %v", err)
	}

	if err := f.archiver.Restore(ctx, tenant, m0, nil); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if f.state(m0) != shard.Sealed {
		t.Fatalf("restored month is %s", f.state(m0))
	}
	tableAfter, err := f.rows.Rows(ctx, tenant, m0, f.topic, 0, 100)
	if err != nil || !reflect.DeepEqual(tableAfter, tableBefore) {
		t.Fatalf("restored rows differ: %v", err)
	}
	sameViews(t, "restored", f.views(), before)
}

// TestArchiveRefusesMonthsThatFailTheChecks: each check of seed 000 §10 holds a month back
// and writes no manifest.
func TestArchiveRefusesMonthsThatFailTheChecks(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(f *fixture)
		problem string
		code    apperr.Code
	}{
		{name: "not sealed", setup: func(f *fixture) {}, code: apperr.Conflict, problem: "only a sealed month"},
		{name: "deliver backlog", problem: "delivery backlog", code: apperr.Conflict, setup: func(f *fixture) {
			m := message.Message{Topic: f.topic, Seq: 3, MsgID: 3, Month: m0}
			if err := f.queue.Push(context.Background(), delivery.Job{Tenant: tenant, MsgID: 3, Topic: f.topic, Message: &m}); err != nil {
				f.t.Fatal(err)
			}
		}},
		{name: "pending route repairs", problem: "route repairs", code: apperr.Conflict, setup: func(f *fixture) { f.repairs.pending = true }},
		{name: "rows missing from the mirror", problem: "route mirror", code: apperr.Conflict, setup: func(f *fixture) {
			if err := f.rows.DeleteMirrorRow(context.Background(), tenant, f.other, m0); err != nil {
				f.t.Fatal(err)
			}
		}},
		{name: "dangling reference", problem: "referenced", code: apperr.Conflict, setup: func(f *fixture) {
			if err := f.shards.SetState(context.Background(), tenant, m0, shard.Sealed, shard.Writable); err != nil {
				f.t.Fatal(err)
			}
			f.append(f.other, 7, m0) // seq 6 never stored
			f.seal(m0)
			if _, err := f.refs.AddFavorite(context.Background(), tenant, msgref.Favorite{User: member, Topic: f.other, Seq: 6}); err != nil {
				f.t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			month := m0
			if tc.name == "not sealed" {
				month = m1
			}
			tc.setup(f)
			rep, checkErr := f.archiver.Check(ctx, tenant, month, nil)
			_, err := f.archiver.Archive(ctx, tenant, month, nil)
			if apperr.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("Archive: %v, want %d mentioning %q", err, tc.code, tc.problem)
			}
			if checkErr == nil && (rep.OK() || !strings.Contains(strings.Join(rep.Problems, ";"), tc.problem)) {
				t.Fatalf("Check found %v", rep.Problems)
			}
			if _, err := f.blobs.Get(ctx, archive.ManifestKey(tenant, month)); !errors.Is(err, archive.ErrNoBlob) {
				t.Fatalf("a refused month has a manifest: %v", err)
			}
			if f.state(m0) != shard.Sealed {
				t.Fatalf("m0 is %s", f.state(m0))
			}
		})
	}
}

// TestDropVerifiesTheTableAgainstTheArchive: a row changed after the export, or a damaged
// archive file, stops the drop; archiving again makes it possible.
func TestDropVerifiesTheTableAgainstTheArchive(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	man, err := f.archiver.Archive(ctx, tenant, m0, nil)
	if err != nil {
		t.Fatal(err)
	}
	editor := memory.NewMessageEditor(f.shards)
	_, err = editor.Modify(ctx, tenant, m0, f.topic, 3, func(cur message.Message) (message.Revision, error) {
		cur.Content, cur.Version = json.RawMessage(`{"text":"edited late"}`), 2
		return message.Revision{Action: message.ActionEdit, Message: cur}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.archiver.Drop(ctx, tenant, m0, nil); apperr.CodeOf(err) != apperr.Conflict || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("Drop after a late edit: %v", err)
	}
	if _, err := f.archiver.Archive(ctx, tenant, m0, nil); err != nil {
		t.Fatalf("archiving again: %v", err)
	}
	if !f.blobs.Corrupt(man.Topics[0].Chunks[1].Key) {
		t.Fatal("no chunk to corrupt")
	}
	if err := f.archiver.Drop(ctx, tenant, m0, nil); err == nil || !strings.Contains(err.Error(), "intact") {
		t.Fatalf("Drop with a damaged chunk: %v", err)
	}
	if _, err := f.archiver.Archive(ctx, tenant, m0, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.archiver.Drop(ctx, tenant, m0, nil); err != nil {
		t.Fatalf("Drop after archiving again: %v", err)
	}
	got, err := f.history.Get(ctx, tenant, member, f.topic, 3)
	if err != nil || string(got.Content) != `{"text":"edited late"}` {
		t.Fatalf("the late edit is lost: %s %v", got.Content, err)
	}
}

// TestArchivedMessagesRefuseChanges: the archive is the record of an archived month.
func TestArchivedMessagesRefuseChanges(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.archiver.Archive(ctx, tenant, m0, nil); err != nil {
		t.Fatal(err)
	}
	editor := archivereader.NewEditor(memory.NewMessageEditor(f.shards), f.states)
	_, err := editor.Modify(ctx, tenant, m0, f.topic, 3, func(cur message.Message) (message.Revision, error) {
		return message.Revision{Message: cur}, nil
	})
	if apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("changing an archived message: %v", err)
	}
}

// TestPurgeRemovesExactlyTheMonth: routes, mirror rows, file entries, archive files and the
// catalog row of the month go; the next month keeps all of its own.
func TestPurgeRemovesExactlyTheMonth(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, name := range []string{f.topic, f.other} {
		rt, err := f.store.Segments(ctx, tenant, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.routes.Replace(ctx, tenant, name, rt); err != nil {
			t.Fatal(err)
		}
	}
	files := []msgref.File{{Topic: f.topic, Seq: 4, Name: "a"}, {Topic: f.topic, Seq: 40, Name: "b"}}
	if err := f.refs.AddFiles(ctx, tenant, files); err != nil {
		t.Fatal(err)
	}
	if err := f.archiver.Purge(ctx, tenant, m0, nil); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("purging a month that is not archived: %v", err)
	}
	if _, err := f.archiver.Archive(ctx, tenant, m0, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.archiver.Purge(ctx, tenant, m0, nil); err != nil {
		t.Fatalf("Purge: %v", err)
	}
	rt, _, err := f.routes.Segments(ctx, tenant, f.topic)
	if err != nil || len(rt) != 1 || rt[0].Month != m1 {
		t.Fatalf("route after purge: %v %v", rt, err)
	}
	if rt, found, _ := f.routes.Segments(ctx, tenant, f.other); found {
		t.Fatalf("the other topic's route still has %v", rt)
	}
	mirror, err := f.store.Segments(ctx, tenant, f.topic)
	if err != nil || !reflect.DeepEqual(segmentMonths(mirror), []month.Month{m1}) {
		t.Fatalf("mirror after purge: %v %v", mirror, err)
	}
	left, err := f.refs.Files(ctx, tenant, f.topic, 0, 10)
	if err != nil || len(left) != 1 || left[0].Seq != 40 {
		t.Fatalf("file entries after purge: %v %v", left, err)
	}
	if keys, _ := f.blobs.List(ctx, archive.MonthPrefix(tenant, m0)); len(keys) != 0 {
		t.Fatalf("archive files left: %v", keys)
	}
	if st := f.state(m0); st != "" {
		t.Fatalf("catalog still lists m0 as %s", st)
	}
	page, err := f.history.History(ctx, history.HistoryRequest{Tenant: tenant, User: member, Topic: f.topic, Limit: 100})
	if err != nil || len(page) != 30 || page[len(page)-1].Seq != 31 {
		t.Fatalf("history after purge: %d messages, %v", len(page), err)
	}
}

func segmentMonths(r route.Route) []month.Month {
	var out []month.Month
	for _, s := range r {
		out = append(out, s.Month)
	}
	return out
}

// TestDropAndPurgeStayOutOfTheManagersWindow: the shard manager recreates the tables of last
// month to two months ahead, so those are never dropped.
func TestDropAndPurgeStayOutOfTheManagersWindow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.seal(m1)
	if _, err := f.archiver.Archive(ctx, tenant, m1, nil); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"drop":  func() error { return f.archiver.Drop(ctx, tenant, m1, nil) },
		"purge": func() error { return f.archiver.Purge(ctx, tenant, m1, nil) },
	} {
		if err := op(); apperr.CodeOf(err) != apperr.Conflict || !strings.Contains(err.Error(), "shard manager") {
			t.Errorf("%s of last month: %v", name, err)
		}
	}
}

var _ ports.MonthRows = (*memory.MonthRows)(nil)
