package modify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/modify"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

const tenant = "t1"

// Users of the fixture: 1 owns the group, 2 is a member, 3 is an outsider. 1 and 2 are friends.
const (
	owner    int64 = 1
	member   int64 = 2
	outsider int64 = 3
)

var start = time.Date(2026, 9, 30, 23, 59, 0, 0, time.UTC)

type fixture struct {
	clock   *memory.Clock
	shards  *memory.ShardStore
	editor  *memory.MessageEditor
	queue   *switchableQueue
	cache   *recordingCache
	manager *shardmanager.Manager
	metrics *memory.Metrics
	send    *send.Service
	history *history.Service
	deps    modify.Deps
	svc     *modify.Service
	group   string
	pair    string
}

// switchableQueue fails Push while down is set, like Redis failing after a change committed.
type switchableQueue struct {
	*memory.DeliverQueue
	mu   sync.Mutex
	down bool
}

func (q *switchableQueue) Push(ctx context.Context, job delivery.Job) error {
	q.mu.Lock()
	down := q.down
	q.mu.Unlock()
	if down {
		return errors.New("redis down")
	}
	return q.DeliverQueue.Push(ctx, job)
}

func (q *switchableQueue) setDown(v bool) { q.mu.Lock(); q.down = v; q.mu.Unlock() }

// recordingCache is a hot cache that only records invalidations, and fails them while down.
type recordingCache struct {
	ports.HotCache
	mu          sync.Mutex
	down        bool
	invalidated []int64
}

func (c *recordingCache) Invalidate(_ context.Context, _, _ string, seq int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return errors.New("redis down")
	}
	c.invalidated = append(c.invalidated, seq)
	return nil
}

func (c *recordingCache) setDown(v bool) { c.mu.Lock(); c.down = v; c.mu.Unlock() }

func (c *recordingCache) seqs() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.invalidated...)
}

func newFixture(t *testing.T, cfg modify.Config) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{clock: memory.NewClock(start), cache: &recordingCache{}, metrics: memory.NewMetrics()}
	f.shards = memory.NewShardStore()
	store := memory.NewMessageStore(f.shards)
	f.editor = memory.NewMessageEditor(f.shards)
	months := memory.NewMonthState(f.clock.Now)
	f.queue = &switchableQueue{DeliverQueue: memory.NewDeliverQueue(f.clock.Now)}
	dir := memory.NewDirectory()
	routes := memory.NewRouteCache()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids := memory.NewIDs(f.clock)
	f.manager = shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{
		Store: f.shards, Months: months, Metrics: f.metrics, Log: log,
	})
	if err := f.manager.Ensure(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	resolver := conversation.NewResolver(dir, ids, membership.New(dir, f.clock, time.Second))
	seqs := memory.NewSeqAllocator(months, f.clock.Now)
	f.send = send.New(send.Config{MsgIDWindow: 5 * time.Minute}, send.Deps{
		Seq: seqs, Store: store, FollowUp: &memory.CommitFollowUp{Routes: routes, Queue: f.queue, Seqs: seqs}, IDs: ids,
		Clock: f.clock, Metrics: f.metrics, Resolver: resolver, Log: log, Months: f.manager,
	})
	f.history = history.New(history.Deps{Store: store, Routes: routes, Months: months, Metrics: f.metrics, Resolver: resolver, Log: log})
	f.deps = modify.Deps{
		Editor: f.editor, DeleteLog: memory.NewDeleteLog(f.shards), Store: store, Owners: dir, HotCache: f.cache,
		Locator: f.history, Events: f.send, Resolver: resolver, Clock: f.clock, Metrics: f.metrics, Log: log,
	}
	f.svc = modify.New(cfg, f.deps)
	for _, u := range []int64{owner, member, outsider} {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dir.AddFriendship(ctx, tenant, owner, member); err != nil {
		t.Fatal(err)
	}
	c, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: owner}, 5000, []int64{member}, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.group = c.Topic
	f.pair = "p2p_1_2"
	return f
}

// post sends a text message and returns its seq.
func (f *fixture) post(t *testing.T, from int64, topicName, text string) int64 {
	t.Helper()
	content, _ := json.Marshal(map[string]string{"text": text})
	res, err := f.send.Send(context.Background(), send.Request{
		Tenant: tenant, From: from, FromDevice: 1, Address: conversation.Address{Topic: topicName},
		Draft: message.Draft{ClientMsgID: fmt.Sprintf("%s-%d-%s", topicName, from, text), Type: "text", Content: content},
	})
	if err != nil {
		t.Fatalf("send %q: %v", text, err)
	}
	return res.Message.Seq
}

func (f *fixture) advance(d time.Duration) { f.clock.Set(f.clock.Now().Add(d)) }

// nextMonth moves the clock past the month boundary and lets the shard manager switch.
func (f *fixture) nextMonth(t *testing.T) {
	t.Helper()
	f.clock.Set(time.Date(2026, 10, 1, 0, 0, 1, 0, time.UTC))
	if err := f.manager.Ensure(context.Background(), tenant); err != nil {
		t.Fatal(err)
	}
}

// messages syncs the whole topic as user sees it.
func (f *fixture) messages(t *testing.T, user int64, topicName string) []message.Message {
	t.Helper()
	res, err := f.history.Sync(context.Background(), history.SyncRequest{Tenant: tenant, User: user, Topic: topicName, Limit: history.MaxLimit})
	if err != nil {
		t.Fatalf("sync %s as %d: %v", topicName, user, err)
	}
	return res.Messages
}

// events returns the system events of the topic as their contents.
func (f *fixture) events(t *testing.T, topicName string) []string {
	t.Helper()
	var out []string
	for _, m := range f.messages(t, owner, topicName) {
		if m.Type == "system" {
			out = append(out, string(m.Content))
		}
	}
	return out
}

func (f *fixture) target(user int64, topicName string, seq int64) modify.Target {
	return modify.Target{Tenant: tenant, User: user, Device: 7, Topic: topicName, Seq: seq}
}

func wantCode(t *testing.T, err error, code apperr.Code) {
	t.Helper()
	if apperr.CodeOf(err) != code {
		t.Fatalf("err = %v, want code %d", err, code)
	}
}

func seqsOf(ms []message.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func TestRecallWindow(t *testing.T) {
	tests := []struct {
		name    string
		window  time.Duration
		elapsed time.Duration
		code    apperr.Code
	}{
		{"at once", 0, 0, apperr.OK},
		{"just inside the default window", 0, 2 * time.Minute, apperr.OK},
		{"past the default window", 0, 2*time.Minute + time.Millisecond, apperr.Forbidden},
		{"inside a configured window", 10 * time.Minute, 9 * time.Minute, apperr.OK},
		{"past a configured window", 10 * time.Second, 11 * time.Second, apperr.Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, modify.Config{RecallWindow: tt.window})
			seq := f.post(t, member, f.group, "oops")
			f.advance(tt.elapsed)
			got, err := f.svc.Recall(context.Background(), f.target(member, f.group, seq))
			wantCode(t, err, tt.code)
			stored := f.messages(t, owner, f.group)[0]
			if tt.code != apperr.OK {
				if stored.Status != message.StatusNormal || len(f.events(t, f.group)) != 0 {
					t.Fatalf("a refused recall changed something: %+v, events %v", stored, f.events(t, f.group))
				}
				return
			}
			if got.Status != message.StatusRecalled || len(got.Content) != 0 || got.Version != 2 {
				t.Fatalf("recalled message = %+v", got)
			}
			if stored.Status != message.StatusRecalled || len(stored.Content) != 0 || stored.Version != 2 {
				t.Fatalf("stored message = %+v", stored)
			}
		})
	}
}

func TestRecallWritesOneRevisionAndOneTopicEvent(t *testing.T) {
	f := newFixture(t, modify.Config{})
	ctx := context.Background()
	seq := f.post(t, member, f.group, "oops")
	drain(t, f.queue, 1)

	for range 2 { // the second is a retry: same answer, nothing new
		got, err := f.svc.Recall(ctx, f.target(member, f.group, seq))
		if err != nil || got.Status != message.StatusRecalled || got.Version != 2 {
			t.Fatalf("recall: %+v, %v", got, err)
		}
	}
	revs := f.editor.Revisions(tenant, f.group, seq)
	if len(revs) != 1 || revs[0].Action != message.ActionRecall || revs[0].Editor != member || revs[0].Month != 202609 ||
		string(revs[0].OldContent) != `{"text":"oops"}` {
		t.Fatalf("revisions = %+v", revs)
	}
	if got := f.events(t, f.group); len(got) != 1 || got[0] != `{"event":"recall","seq":1,"version":2}` {
		t.Fatalf("events = %v", got)
	}
	event := f.messages(t, owner, f.group)[1]
	if event.From != member || event.Seq != 2 || event.ClientMsgID != "recall:1:2" {
		t.Fatalf("event message = %+v", event)
	}
	jobs := drain(t, f.queue, 2)
	for _, job := range jobs {
		// One job for the whole topic: the fan-out goes to every member from the job, without
		// any row per member; the recalling device has its response instead.
		if job.Recipients != nil || job.Message.Seq != 2 || job.ExcludeDevice != 7 {
			t.Fatalf("deliver job = %+v", job)
		}
	}
	if got := f.cache.seqs(); len(got) != 2 || got[0] != seq {
		t.Fatalf("hot cache invalidations = %v", got)
	}
}

// drain takes n deliver jobs (retries of an event enqueue it again; the worker's done marker
// keeps that to one push).
func drain(t *testing.T, q *switchableQueue, n int) []delivery.Job {
	t.Helper()
	var out []delivery.Job
	for range n {
		job, ok, err := q.Take(context.Background(), tenant, 0, 0)
		if err != nil || !ok {
			t.Fatalf("take: ok=%v err=%v", ok, err)
		}
		out = append(out, job)
	}
	if _, ok, _ := q.Take(context.Background(), tenant, 0, 0); ok {
		t.Fatal("more deliver jobs than expected")
	}
	return out
}

func TestPermissions(t *testing.T) {
	ctx := context.Background()
	edit := func(f *fixture, user int64, topicName string, seq int64) error {
		_, err := f.svc.Edit(ctx, modify.EditRequest{Target: f.target(user, topicName, seq), Content: json.RawMessage(`{"text":"x"}`), Version: 1})
		return err
	}
	recall := func(f *fixture, user int64, topicName string, seq int64) error {
		_, err := f.svc.Recall(ctx, f.target(user, topicName, seq))
		return err
	}
	deleteAll := func(f *fixture, user int64, topicName string, seq int64) error {
		_, err := f.svc.DeleteForAll(ctx, f.target(user, topicName, seq))
		return err
	}
	tests := []struct {
		name   string
		action func(f *fixture, user int64, topicName string, seq int64) error
		sender int64
		actor  int64
		p2p    bool
		code   apperr.Code
	}{
		{"recall by the sender", recall, member, member, false, apperr.OK},
		{"recall by another member", recall, member, owner, false, apperr.Forbidden},
		{"recall by an outsider", recall, member, outsider, false, apperr.Forbidden},
		{"recall in a P2P pair", recall, owner, owner, true, apperr.OK},
		{"recall of the peer's P2P message", recall, owner, member, true, apperr.Forbidden},
		{"edit by the sender", edit, member, member, false, apperr.OK},
		{"edit by another member", edit, member, owner, false, apperr.Forbidden},
		{"edit by an outsider", edit, member, outsider, false, apperr.Forbidden},
		{"delete for all by the sender", deleteAll, member, member, false, apperr.OK},
		{"delete for all by the group owner", deleteAll, member, owner, false, apperr.OK},
		{"delete for all by another member", deleteAll, owner, member, false, apperr.Forbidden},
		{"delete for all of the peer's P2P message", deleteAll, owner, member, true, apperr.Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, modify.Config{})
			topicName := f.group
			if tt.p2p {
				topicName = f.pair
			}
			seq := f.post(t, tt.sender, topicName, "hello")
			wantCode(t, tt.action(f, tt.actor, topicName, seq), tt.code)
			wantEvents := 0
			if tt.code == apperr.OK {
				wantEvents = 1
			}
			if got := f.events(t, topicName); len(got) != wantEvents {
				t.Fatalf("events = %v, want %d", got, wantEvents)
			}
		})
	}
}

func TestEditVersions(t *testing.T) {
	ctx := context.Background()
	big := `{"text":"` + strings.Repeat("x", message.MaxContentSize) + `"}`
	tests := []struct {
		name    string
		prepare func(t *testing.T, f *fixture, seq int64)
		content string
		version int
		code    apperr.Code
		want    int // the version after the request
	}{
		{"the current version", nil, `{"text":"fixed"}`, 1, apperr.OK, 2},
		{"a stale version", editedTo(`{"text":"first"}`), `{"text":"second"}`, 1, apperr.Conflict, 2},
		{"a version from the future", nil, `{"text":"fixed"}`, 5, apperr.Conflict, 1},
		{"no version", nil, `{"text":"fixed"}`, 0, apperr.InvalidArgument, 1},
		{"the retry of an edit that committed", editedTo(`{"text":"fixed"}`), `{ "text" : "fixed" }`, 1, apperr.OK, 2},
		{"a recalled message", recalled, `{"text":"fixed"}`, 2, apperr.Conflict, 2},
		{"a message deleted for everyone", deletedForAll, `{"text":"fixed"}`, 2, apperr.NotFound, 2},
		{"content that is not an object", nil, `"text"`, 1, apperr.InvalidArgument, 1},
		{"content over 64 KB", nil, big, 1, apperr.TooLarge, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, modify.Config{})
			seq := f.post(t, member, f.group, "typo")
			if tt.prepare != nil {
				tt.prepare(t, f, seq)
			}
			before := len(f.events(t, f.group))
			got, err := f.svc.Edit(ctx, modify.EditRequest{
				Target: f.target(member, f.group, seq), Content: json.RawMessage(tt.content), Version: tt.version,
			})
			wantCode(t, err, tt.code)
			stored := f.messages(t, owner, f.group)[0]
			if stored.Version != tt.want {
				t.Fatalf("version = %d, want %d", stored.Version, tt.want)
			}
			events := f.events(t, f.group)
			if tt.code != apperr.OK {
				if len(events) != before {
					t.Fatalf("a refused edit wrote an event: %v", events)
				}
				return
			}
			if got.Version != tt.want || got.EditedAt.IsZero() || got.Type != "text" {
				t.Fatalf("edited message = %+v", got)
			}
			if want := fmt.Sprintf(`{"event":"edit","seq":%d,"version":%d}`, seq, tt.want); len(events) != 1 || events[0] != want {
				t.Fatalf("events = %v, want [%s]", events, want)
			}
			if revs := f.editor.Revisions(tenant, f.group, seq); len(revs) != 1 || string(revs[0].OldContent) != `{"text":"typo"}` {
				t.Fatalf("revisions = %+v", revs)
			}
		})
	}
}

func editedTo(content string) func(t *testing.T, f *fixture, seq int64) {
	return func(t *testing.T, f *fixture, seq int64) {
		t.Helper()
		if _, err := f.svc.Edit(context.Background(), modify.EditRequest{
			Target: f.target(member, f.group, seq), Content: json.RawMessage(content), Version: 1,
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func recalled(t *testing.T, f *fixture, seq int64) {
	t.Helper()
	if _, err := f.svc.Recall(context.Background(), f.target(member, f.group, seq)); err != nil {
		t.Fatal(err)
	}
}

func deletedForAll(t *testing.T, f *fixture, seq int64) {
	t.Helper()
	if _, err := f.svc.DeleteForAll(context.Background(), f.target(member, f.group, seq)); err != nil {
		t.Fatal(err)
	}
}

func TestTargetsThatCannotChange(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		seq  func(t *testing.T, f *fixture) int64
		code apperr.Code
	}{
		{"seq zero", func(*testing.T, *fixture) int64 { return 0 }, apperr.InvalidArgument},
		{"a seq never written", func(*testing.T, *fixture) int64 { return 99 }, apperr.NotFound},
		{"a system event", func(t *testing.T, f *fixture) int64 {
			recalled(t, f, f.post(t, member, f.group, "x"))
			return 3 // the event after "first" and "x"
		}, apperr.Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, modify.Config{})
			f.post(t, member, f.group, "first")
			_, err := f.svc.Recall(ctx, f.target(member, f.group, tt.seq(t, f)))
			wantCode(t, err, tt.code)
		})
	}
	t.Run("an invalid topic", func(t *testing.T) {
		f := newFixture(t, modify.Config{})
		_, err := f.svc.Recall(ctx, f.target(member, "grp_01", 1))
		wantCode(t, err, apperr.InvalidArgument)
	})
}

func TestDeleteForAll(t *testing.T) {
	f := newFixture(t, modify.Config{})
	ctx := context.Background()
	seq := f.post(t, member, f.group, "secret")
	f.post(t, member, f.group, "fine")
	for range 2 { // the second is a retry
		got, err := f.svc.DeleteForAll(ctx, f.target(member, f.group, seq))
		if err != nil || got.Status != message.StatusDeleted || len(got.Content) != 0 || got.Version != 2 {
			t.Fatalf("delete for all: %+v, %v", got, err)
		}
	}
	// Sync keeps the tombstone so clients see the change; history leaves it out.
	synced := f.messages(t, member, f.group)
	if synced[0].Status != message.StatusDeleted || len(synced[0].Content) != 0 {
		t.Fatalf("synced = %+v", synced[0])
	}
	hist, err := f.history.History(ctx, history.HistoryRequest{Tenant: tenant, User: member, Topic: f.group})
	if err != nil || fmt.Sprint(seqsOf(hist)) != "[3 2]" {
		t.Fatalf("history = %v, %v", seqsOf(hist), err)
	}
	if got := f.events(t, f.group); len(got) != 1 || got[0] != `{"event":"delete","seq":1}` {
		t.Fatalf("events = %v", got)
	}
	if _, err := f.svc.Recall(ctx, f.target(member, f.group, seq)); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("recall of a deleted message: %v", err)
	}
}

func TestDeleteForSelfRangeValidation(t *testing.T) {
	tests := []struct {
		name    string
		user    int64
		low, hi int64
		code    apperr.Code
	}{
		{"a valid range", member, 1, 3, apperr.OK},
		{"hi past the last message", member, 2, 1_000, apperr.OK},
		{"low zero", member, 0, 3, apperr.InvalidArgument},
		{"negative low", member, -5, 3, apperr.InvalidArgument},
		{"empty range", member, 3, 3, apperr.InvalidArgument},
		{"reversed range", member, 3, 1, apperr.InvalidArgument},
		{"wider than the bound", member, 1, 1 + modify.MaxDeleteRange + 1, apperr.InvalidArgument},
		{"just the bound", member, 1, 1 + modify.MaxDeleteRange, apperr.OK},
		{"nothing at or after low", member, 6, 10, apperr.InvalidArgument},
		{"an outsider", outsider, 1, 3, apperr.Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, modify.Config{})
			for i := range 5 {
				f.post(t, owner, f.group, fmt.Sprint("m", i))
			}
			err := f.svc.DeleteForSelf(context.Background(), modify.RangeRequest{Tenant: tenant, User: tt.user, Topic: f.group, Low: tt.low, Hi: tt.hi})
			wantCode(t, err, tt.code)
			if tt.code != apperr.OK && len(f.messages(t, member, f.group)) != 5 {
				t.Fatalf("a refused delete hid messages: %v", seqsOf(f.messages(t, member, f.group)))
			}
		})
	}
}

// TestDeleteForSelfAcrossMonths hides a range that spans a month boundary from one user, in
// sync and history, while the others and later messages stay visible.
func TestDeleteForSelfAcrossMonths(t *testing.T) {
	f := newFixture(t, modify.Config{})
	ctx := context.Background()
	for i := range 5 {
		f.post(t, owner, f.group, fmt.Sprint("sep-", i))
	}
	f.nextMonth(t)
	for i := range 5 {
		f.post(t, owner, f.group, fmt.Sprint("oct-", i))
	}
	if err := f.svc.DeleteForSelf(ctx, modify.RangeRequest{Tenant: tenant, User: member, Topic: f.group, Low: 3, Hi: 8}); err != nil {
		t.Fatal(err)
	}
	// hi past the end stops at the last message: seq 12, sent later, stays visible.
	if err := f.svc.DeleteForSelf(ctx, modify.RangeRequest{Tenant: tenant, User: member, Topic: f.group, Low: 10, Hi: 50}); err != nil {
		t.Fatal(err)
	}
	f.post(t, owner, f.group, "later")

	historyOf := func(user int64, before int64, limit int) string {
		ms, err := f.history.History(ctx, history.HistoryRequest{Tenant: tenant, User: user, Topic: f.group, Before: before, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(seqsOf(ms))
	}
	syncOf := func(user, since int64, limit int) string {
		res, err := f.history.Sync(ctx, history.SyncRequest{Tenant: tenant, User: user, Topic: f.group, Since: since, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(seqsOf(res.Messages))
	}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"sync, the user", syncOf(member, 0, 50), "[1 2 8 9 11]"},
		{"sync paged across the range", syncOf(member, 2, 2), "[8 9]"},
		{"sync, the owner", syncOf(owner, 0, 50), "[1 2 3 4 5 6 7 8 9 10 11]"},
		{"history, the user", historyOf(member, 0, 50), "[11 9 8 2 1]"},
		{"history paged across the boundary", historyOf(member, 9, 2), "[8 2]"},
		{"history, the owner", historyOf(owner, 0, 3), "[11 10 9]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("seqs = %s, want %s", tt.got, tt.want)
			}
		})
	}
}

// TestRecallAndEditLocateOldMonth changes a message of the previous month: the route finds its
// table, the revision keeps that month, and the event lands in the current month.
func TestRecallAndEditLocateOldMonth(t *testing.T) {
	f := newFixture(t, modify.Config{})
	ctx := context.Background()
	toEdit := f.post(t, member, f.group, "edit me")
	toRecall := f.post(t, member, f.group, "recall me")
	f.nextMonth(t) // 61 s later: still inside the recall window

	edited, err := f.svc.Edit(ctx, modify.EditRequest{Target: f.target(member, f.group, toEdit), Content: json.RawMessage(`{"text":"edited"}`), Version: 1})
	if err != nil || edited.Month != 202609 || edited.Version != 2 {
		t.Fatalf("edit: %+v, %v", edited, err)
	}
	recalledMsg, err := f.svc.Recall(ctx, f.target(member, f.group, toRecall))
	if err != nil || recalledMsg.Month != 202609 || recalledMsg.Status != message.StatusRecalled {
		t.Fatalf("recall: %+v, %v", recalledMsg, err)
	}
	for _, seq := range []int64{toEdit, toRecall} {
		if revs := f.editor.Revisions(tenant, f.group, seq); len(revs) != 1 || revs[0].Month != 202609 {
			t.Fatalf("revisions of %d = %+v", seq, revs)
		}
	}
	var eventMonths []month.Month
	for _, m := range f.messages(t, owner, f.group) {
		if m.Type == "system" {
			eventMonths = append(eventMonths, m.Month)
		}
	}
	if fmt.Sprint(eventMonths) != "[202610 202610]" {
		t.Fatalf("events stored in %v", eventMonths)
	}
}

// TestFailureAfterCommitIsRetried: when the event or the cache invalidation fails after the
// change committed, the client gets 50301, and its retry completes with exactly one event.
func TestFailureAfterCommitIsRetried(t *testing.T) {
	tests := []struct {
		name   string
		outage func(f *fixture, down bool)
	}{
		{"deliver queue down", func(f *fixture, down bool) { f.queue.setDown(down) }},
		{"hot cache down", func(f *fixture, down bool) { f.cache.setDown(down) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, modify.Config{})
			ctx := context.Background()
			seq := f.post(t, member, f.group, "oops")
			tt.outage(f, true)
			_, err := f.svc.Recall(ctx, f.target(member, f.group, seq))
			wantCode(t, err, apperr.Busy)
			tt.outage(f, false)
			got, err := f.svc.Recall(ctx, f.target(member, f.group, seq))
			if err != nil || got.Version != 2 {
				t.Fatalf("retry: %+v, %v", got, err)
			}
			if events := f.events(t, f.group); len(events) != 1 {
				t.Fatalf("events = %v", events)
			}
			if revs := f.editor.Revisions(tenant, f.group, seq); len(revs) != 1 {
				t.Fatalf("revisions = %+v", revs)
			}
			failed, ok := f.metrics.Count("message_modify_total", "recall", "failed"), f.metrics.Count("message_modify_total", "recall", "ok")
			if failed != 1 || ok != 1 {
				t.Fatalf("recalls counted failed %v, ok %v; want 1 and 1", failed, ok)
			}
		})
	}
}

func TestWithoutHotCache(t *testing.T) {
	f := newFixture(t, modify.Config{})
	deps := f.deps
	deps.HotCache = nil
	svc := modify.New(modify.Config{}, deps)
	seq := f.post(t, member, f.group, "oops")
	if got, err := svc.Recall(context.Background(), f.target(member, f.group, seq)); err != nil || got.Status != message.StatusRecalled {
		t.Fatalf("recall without a hot cache: %+v, %v", got, err)
	}
}
