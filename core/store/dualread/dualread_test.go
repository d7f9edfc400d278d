package dualread_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/dualread"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

const (
	tenant = "t1"
	reader = int64(2) // a member, who deleted seqs 10-14 for themself
)

// The legacy table spans m0-m2; m2 is the active month.
var (
	m0 = month.Month(203101)
	m2 = month.Month(203103)
)

type fixture struct {
	t       *testing.T
	shards  *memory.ShardStore
	store   *memory.MessageStore
	legacy  *memory.Legacy
	months  *memory.MonthState
	history *history.Service
	dual    *dualread.Store
	finder  *dualread.Finder
	editor  *dualread.Editor
	topic   string
	rows    []message.Message
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// newFixture loads 90 legacy messages of one group, 30 a month over m0-m2 (every 7th recalled,
// every 11th deleted for everyone); only the active month has a table, as before a cutover.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(m2.Start().Add(20 * 24 * time.Hour))
	f := &fixture{t: t, shards: memory.NewShardStore(), months: memory.NewMonthState(clock.Now)}
	f.store = memory.NewMessageStore(f.shards)
	f.legacy = memory.NewLegacy(f.shards, clock.Now)
	if err := f.shards.EnsureTable(ctx, tenant, m2); err != nil {
		t.Fatal(err)
	}
	if err := f.shards.SetState(ctx, tenant, m2, shard.Prepared, shard.Writable); err != nil {
		t.Fatal(err)
	}
	if err := f.months.MarkReady(ctx, tenant, 0, m2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.months.Advance(ctx, tenant, 0, m2); err != nil {
		t.Fatal(err)
	}
	dir := memory.NewDirectory()
	conv, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 500, []int64{reader}, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.topic = conv.Topic
	for i := range 90 {
		sq := int64(i + 1)
		m := m0.Add(i / 30)
		msg := message.Message{
			Topic: f.topic, GroupID: 10, ConversationID: 500, Seq: sq, MsgID: 1000 + sq, From: 1, ClientMsgID: fmt.Sprintf("l%d", sq),
			Type: "text", Content: json.RawMessage(fmt.Sprintf(`{"text":"legacy %d"}`, sq)), Status: message.StatusNormal,
			Version: 1, CreatedAt: m.Start().Add(time.Duration(i%30+1) * time.Hour), Month: m,
		}
		switch {
		case sq%7 == 0:
			msg.Status, msg.Content, msg.Version = message.StatusRecalled, nil, 2
		case sq%11 == 0:
			msg.Status, msg.Content, msg.Version = message.StatusDeleted, nil, 2
		}
		f.rows = append(f.rows, msg)
	}
	f.legacy.Load(tenant, f.rows)
	dellog := memory.NewDeleteLog(f.shards)
	if err := dellog.HideRange(ctx, tenant, f.topic, reader, 10, 15); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	src := dualread.NewSource(f.legacy, wallClock{}, time.Nanosecond, log)
	f.dual = dualread.NewStore(f.store, src)
	f.finder = dualread.NewFinder(f.store, src)
	f.editor = dualread.NewEditor(memory.NewMessageEditor(f.shards), src, f.legacy)
	ids := memory.NewIDs(clock)
	f.history = history.New(history.Deps{
		Store: f.dual, Routes: memory.NewRouteCache(), Months: f.months, Metrics: memory.NewMetrics(),
		Resolver: conversation.NewResolver(dir, ids, membership.New(dir, clock, time.Minute)), Log: log,
		Hidden: dellog, Search: dualread.NewSearch(f.store, src),
	})
	return f
}

// cutover records the watermark and gives every legacy month a table, as the job's preparation.
func (f *fixture) cutover() {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.legacy.Cutover(ctx, tenant); err != nil {
		f.t.Fatal(err)
	}
	for m := m0; m < m2; m = m.Next() {
		if err := f.shards.EnsureTable(ctx, tenant, m); err != nil {
			f.t.Fatal(err)
		}
	}
}

// copy runs copy batches of n rows, at most batches of them (0: to the end).
func (f *fixture) copy(n, batches int) {
	f.t.Helper()
	for i := 0; batches == 0 || i < batches; i++ {
		b, err := f.legacy.CopyBatch(context.Background(), tenant, n)
		if err != nil {
			f.t.Fatal(err)
		}
		if b.Rows == 0 {
			return
		}
	}
}

// view renders what every query path answers, for an admin and for the member with deleted
// ranges; equal views mean equal answers.
func (f *fixture) view() string {
	f.t.Helper()
	ctx := context.Background()
	var b strings.Builder
	line := func(m message.Message) {
		fmt.Fprintf(&b, " %d/%d/%s/%d/%s/%s", m.Seq, m.MsgID, m.Status, m.Version, m.Month, m.Content)
	}
	for _, user := range []int64{0, reader} {
		fmt.Fprintf(&b, "\nuser %d sync:", user)
		for since := int64(0); ; {
			r, err := f.history.Sync(ctx, history.SyncRequest{Tenant: tenant, User: user, Topic: f.topic, Since: since, Limit: 7})
			if err != nil {
				f.t.Fatalf("sync: %v", err)
			}
			for _, m := range r.Messages {
				line(m)
			}
			if !r.HasMore {
				break
			}
			since = r.LastSeq
		}
		b.WriteString("\nhistory:")
		for before := int64(0); ; {
			page, err := f.history.History(ctx, history.HistoryRequest{Tenant: tenant, User: user, Topic: f.topic, Before: before, Limit: 9})
			if err != nil {
				f.t.Fatalf("history: %v", err)
			}
			for _, m := range page {
				line(m)
			}
			if len(page) < 9 {
				break
			}
			before = page[len(page)-1].Seq
		}
		b.WriteString("\ncontext:")
		for _, sq := range []int64{29, 31, 60, 89} {
			msgs, err := f.history.Context(ctx, history.ContextRequest{Tenant: tenant, User: user, Topic: f.topic, Seq: sq, N: 4})
			if err != nil && apperr.CodeOf(err) != apperr.NotFound {
				f.t.Fatalf("context %d: %v", sq, err)
			}
			for _, m := range msgs {
				line(m)
			}
		}
		b.WriteString("\nget:")
		for _, sq := range []int64{1, 30, 31, 77, 90, 91} {
			m, err := f.history.Get(ctx, tenant, user, f.topic, sq)
			if err != nil {
				fmt.Fprintf(&b, " %d/%d", sq, apperr.CodeOf(err))
				continue
			}
			line(m)
		}
	}
	b.WriteString("\nsearch:")
	found, err := f.history.Search(ctx, history.SearchRequest{Tenant: tenant, Topic: f.topic, Text: "legacy 1", From: m0.Start(), To: m2.End(), Limit: 200})
	if err != nil {
		f.t.Fatalf("search: %v", err)
	}
	for _, m := range found {
		line(m)
	}
	b.WriteString("\nfind:")
	for _, id := range []int64{1001, 1045, 1090} {
		m, err := f.finder.FindByID(ctx, tenant, month.Of(f.rows[id-1001].CreatedAt), id)
		if err != nil {
			f.t.Fatalf("find %d: %v", id, err)
		}
		line(m)
	}
	return b.String()
}

func TestReadsAreTheSameBeforeDuringAndAfterTheCopy(t *testing.T) {
	f := newFixture(t)
	before := f.view()
	for _, want := range []string{" 1/1001/normal/1/203101/", " 90/1090/normal/1/203103/", " 7/1007/recalled/2/203101/"} {
		if !strings.Contains(before, want) {
			t.Fatalf("legacy reads lack %q:\n%s", want, before)
		}
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"after the cutover", f.cutover},
		{"a third copied", func() { f.copy(10, 3) }},
		{"two thirds copied", func() { f.copy(7, 5) }},
		{"all copied", func() { f.copy(1000, 0) }},
		{"legacy table retired", func() {
			if err := f.legacy.Finish(context.Background(), tenant); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, s := range steps {
		s.do()
		if got := f.view(); got != before {
			t.Fatalf("%s, reads differ:\nbefore %s\nnow    %s", s.name, before, got)
		}
	}
}

func TestMaxSeqAndSegmentsIncludeTheLegacyRows(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if n, err := f.dual.MaxSeq(ctx, tenant, f.topic); err != nil || n != 90 {
		t.Fatalf("MaxSeq before the copy = %d, %v", n, err)
	}
	f.cutover()
	f.copy(45, 1)
	// A live message in the active month continues the topic.
	live := message.Message{Topic: f.topic, GroupID: 10, ConversationID: 500, Seq: 91, MsgID: 5000, From: 1, ClientMsgID: "live",
		Type: "text", Status: message.StatusNormal, Version: 1, CreatedAt: m2.Start().Add(40 * 24 * time.Hour), Month: m2}
	if _, err := f.dual.Append(ctx, tenant, live, "h"); err != nil {
		t.Fatal(err)
	}
	rt, err := f.dual.Segments(ctx, tenant, f.topic)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range rt {
		got = append(got, fmt.Sprintf("%s:%d-%d/%d", s.Month, s.MinSeq, s.MaxSeq, s.Count))
	}
	// m2's count is the larger of mirror and legacy while it is not copied yet.
	if want := []string{"203101:1-30/30", "203102:31-60/30", "203103:61-91/30"}; !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	if n, err := f.dual.MaxSeq(ctx, tenant, f.topic); err != nil || n != 91 {
		t.Fatalf("MaxSeq = %d, %v", n, err)
	}
	r, err := f.history.Sync(ctx, history.SyncRequest{Tenant: tenant, Topic: f.topic, Since: 88, Limit: 10})
	if err != nil || len(r.Messages) != 3 || r.Messages[2].MsgID != 5000 {
		t.Fatalf("sync past the legacy rows: %+v, %v", r.Messages, err)
	}
}

func recall(current message.Message) (message.Revision, error) {
	next := current
	next.Status, next.Content, next.Version = message.StatusRecalled, nil, current.Version+1
	return message.Revision{Action: message.ActionRecall, Editor: current.From, At: time.Now(), Message: next}, nil
}

func TestEditorCopiesALegacyMessageBeforeChangingIt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.editor.Modify(ctx, tenant, m2, f.topic, 62, recall); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("before the cutover the old system owns the rows: %v", err)
	}
	f.cutover()
	got, err := f.editor.Modify(ctx, tenant, m0, f.topic, 5, recall)
	if err != nil || got.Status != message.StatusRecalled || got.Version != 2 {
		t.Fatalf("recall of an uncopied legacy message = %+v, %v", got, err)
	}
	m, err := f.history.Get(ctx, tenant, 0, f.topic, 5)
	if err != nil || m.Status != message.StatusRecalled {
		t.Fatalf("read after the recall = %+v, %v", m, err)
	}
	if _, err := f.editor.Modify(ctx, tenant, m0, f.topic, 500, recall); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a seq nobody has: %v", err)
	}
	// The backfill skips the copied row; the change stays.
	f.copy(1000, 0)
	p, err := f.legacy.Progress(ctx, tenant)
	if err != nil || p.Job.Skipped != 1 || p.Job.Copied != 89 {
		t.Fatalf("progress %+v, %v", p.Job, err)
	}
	if m, err := f.history.Get(ctx, tenant, 0, f.topic, 5); err != nil || m.Status != message.StatusRecalled {
		t.Fatalf("read after the copy = %+v, %v", m, err)
	}
}

// goneLegacy is a legacy table that was retired under a cached status.
type goneLegacy struct{ ports.LegacyMessages }

func (goneLegacy) Status(context.Context, string) (legacy.Status, error) {
	return legacy.Status{Present: true, Phase: legacy.PhaseVerified}, nil
}

func TestAReadFindingTheTableGoneUsesTheMonthTables(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.cutover()
	f.copy(1000, 0)
	if err := f.legacy.Finish(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	src := dualread.NewSource(goneLegacy{f.legacy}, wallClock{}, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	store := dualread.NewStore(f.store, src)
	got, err := store.Page(ctx, tenant, m0, message.PageQuery{Topic: f.topic, Limit: 100})
	if err != nil || len(got) != 28 { // 30 less the deleted seqs 11 and 22
		t.Fatalf("page = %d messages, %v", len(got), err)
	}
	if n, err := store.MaxSeq(ctx, tenant, f.topic); err != nil || n != 90 {
		t.Fatalf("MaxSeq = %d, %v", n, err)
	}
	if _, err := store.Get(ctx, tenant, m0, f.topic, 500); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("Get of nothing: %v", err)
	}
}

func TestAMonthWithoutATableAnswersFromTheLegacyRows(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	got, err := f.dual.Page(ctx, tenant, m0, message.PageQuery{Topic: f.topic, Limit: 5})
	if err != nil || len(got) != 5 || got[0].Seq != 1 {
		t.Fatalf("page of a legacy month without a table = %+v, %v", got, err)
	}
	if _, err := f.dual.Page(ctx, tenant, m0.Add(-1), message.PageQuery{Topic: f.topic, Limit: 5}); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("page of a month without table or rows: %v", err)
	}
	if m, err := f.dual.Get(ctx, tenant, m0, f.topic, 3); err != nil || m.MsgID != 1003 {
		t.Fatalf("get = %+v, %v", m, err)
	}
	if _, err := f.dual.Get(ctx, tenant, m0.Add(-1), f.topic, 3); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("get in a month without table or row: %v", err)
	}
}
