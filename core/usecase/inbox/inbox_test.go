package inbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/ports"
)

const tenant = "t1"

var testMonth = month.Month(202605)

type fixture struct {
	clock   *memory.Clock
	dir     *memory.Directory
	shards  *memory.ShardStore
	store   *memory.MessageStore
	reads   *memory.ReadStore
	dialogs *memory.DialogStore
	mailbox *memory.Mailbox
	metrics *memory.Metrics
	svc     *inbox.Service
	mailer  *inbox.Mailer
}

// newFixture: users 1 and 2, who share groups 1..groups (conversation 100+g).
func newFixture(t *testing.T, groups int) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	f := &fixture{
		clock: clock, dir: memory.NewDirectory(), shards: memory.NewShardStore(), dialogs: memory.NewDialogStore(clock.Now),
		mailbox: memory.NewMailbox(), metrics: memory.NewMetrics(),
	}
	f.store = memory.NewMessageStore(f.shards)
	f.reads = memory.NewReadStore(f.dir, f.shards)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.svc = inbox.New(inbox.Deps{
		Dialogs: f.dialogs, Reads: f.reads, Mailbox: f.mailbox, Clock: clock, Metrics: f.metrics, Log: log,
	})
	f.mailer = inbox.NewMailer(inbox.MailerDeps{Mailbox: f.mailbox, Pusher: nobodyOnline{}, IDs: memory.NewIDs(clock), Clock: clock, Log: log})
	for _, u := range []int64{1, 2} {
		if err := f.dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	for g := int64(1); g <= int64(groups); g++ {
		if _, err := f.dir.CreateGroup(ctx, tenant, social.Group{ID: g, Owner: 2}, 100+g, []int64{1}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.shards.EnsureTable(ctx, tenant, testMonth); err != nil {
		t.Fatal(err)
	}
	if err := f.shards.SetState(ctx, tenant, testMonth, shard.Prepared, shard.Writable); err != nil {
		t.Fatal(err)
	}
	// User 1's list counts as built unless a test drops it.
	if err := f.dialogs.Rebuild(ctx, tenant, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	return f
}

// nobodyOnline is a DevicePusher with no connected device; the mailer only uses PushDevice.
type nobodyOnline struct{ ports.DevicePusher }

func (nobodyOnline) PushDevice(context.Context, string, int64, uint64, delivery.Push) int { return 0 }

// deliver stores message seq of group g from user 2 at score and applies it to user 1's list.
func (f *fixture) deliver(t *testing.T, g, seq, score int64) {
	t.Helper()
	m := message.Message{
		Topic: fmt.Sprintf("grp_%d", g), GroupID: g, ConversationID: 100 + g, Seq: seq, MsgID: g*1000 + seq, From: 2,
		ClientMsgID: fmt.Sprintf("c%d-%d", g, seq), Type: "text", Content: json.RawMessage(`{"text":"hi"}`),
		Status: message.StatusNormal, Version: 1, CreatedAt: time.UnixMilli(score).UTC(), Month: testMonth,
	}
	if _, err := f.store.Append(context.Background(), tenant, m, "h"); err != nil {
		t.Fatal(err)
	}
	_, err := f.dialogs.Apply(context.Background(), tenant, dialog.Update{
		ConversationID: m.ConversationID, Score: score, Sender: 2, Preview: dialog.PreviewOf(m),
		Once: fmt.Sprint(m.MsgID), OnceTTL: time.Minute, Batches: []dialog.Batch{{Users: []int64{1, 2}}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) sync(t *testing.T, r inbox.SyncRequest) inbox.SyncResult {
	t.Helper()
	r.Tenant, r.User = tenant, 1
	if r.Device == 0 {
		r.Device = 7
	}
	res, err := f.svc.Sync(context.Background(), r)
	if err != nil {
		t.Fatalf("Sync(%+v): %v", r, err)
	}
	return res
}

func TestSyncPagesDialogsByScore(t *testing.T) {
	cases := []struct {
		name   string
		scores []int64 // of groups 1.., in order
		limit  int
		pages  [][]int64 // conversation ids per page
	}{
		{"distinct scores", []int64{100, 200, 300, 400, 500}, 2, [][]int64{{101, 102}, {103, 104}, {105}}},
		{"a tie across the page end moves to the next page", []int64{100, 200, 200, 300}, 2, [][]int64{{101}, {102, 103}, {104}}},
		{"a tie larger than the page is kept whole", []int64{100, 100, 100, 200}, 2, [][]int64{{101, 102, 103}, {104}}},
		{"exactly one page", []int64{100, 200}, 2, [][]int64{{101, 102}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, len(c.scores))
			for i, s := range c.scores {
				f.deliver(t, int64(i+1), 1, s)
			}
			var cursor int64
			for i, want := range c.pages {
				res := f.sync(t, inbox.SyncRequest{DialogScore: cursor, Limit: c.limit})
				var got []int64
				for _, d := range res.Dialogs {
					got = append(got, d.ConversationID)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("page %d = %v, want %v", i, got, want)
				}
				if last := i == len(c.pages)-1; res.HasMore == last {
					t.Fatalf("page %d: has_more %v", i, res.HasMore)
				}
				if res.DialogScore != res.Dialogs[len(res.Dialogs)-1].Score {
					t.Fatalf("page %d: cursor %d, want the last score", i, res.DialogScore)
				}
				cursor = res.DialogScore
			}
			if res := f.sync(t, inbox.SyncRequest{DialogScore: cursor, Limit: c.limit}); len(res.Dialogs) != 0 || res.HasMore || res.DialogScore != cursor {
				t.Fatalf("after the last page: %+v", res)
			}
		})
	}
}

func TestSyncDescribesDialogs(t *testing.T) {
	f := newFixture(t, 1)
	f.deliver(t, 1, 1, 1000)
	f.deliver(t, 1, 2, 2000)
	if _, _, err := f.reads.Advance(context.Background(), tenant, 1, 101, 1, 1001); err != nil {
		t.Fatal(err)
	}
	if err := f.dialogs.SetPinned(context.Background(), tenant, 1, 101, 5); err != nil {
		t.Fatal(err)
	}
	res := f.sync(t, inbox.SyncRequest{})
	if len(res.Dialogs) != 1 {
		t.Fatalf("dialogs = %+v", res.Dialogs)
	}
	d := res.Dialogs[0]
	// The list counts two, but only one message follows the watermark.
	if d.Topic != "grp_1" || d.Score != 2000 || d.LastSeq != 2 || d.ReadSeq != 1 || d.Unread != 1 || !d.Pinned || d.Muted ||
		d.Preview.Seq != 2 || d.Preview.Text != "hi" {
		t.Fatalf("dialog = %+v", d)
	}
}

// TestSyncTrustsTheWatermarkOverARolledBackList: Redis rolled back past a READ (a failover to
// a replica that missed it) brings the old unread count back; the watermark in MySQL says
// everything was read (found by the simulation, core/simulation).
func TestSyncTrustsTheWatermarkOverARolledBackList(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1)
	for seq := int64(1); seq <= 3; seq++ {
		f.deliver(t, 1, seq, 1000*seq)
	}
	restore := f.dialogs.Snapshot()
	if _, _, err := f.reads.Advance(ctx, tenant, 1, 101, 3, 1003); err != nil {
		t.Fatal(err)
	}
	if err := f.dialogs.MarkRead(ctx, tenant, 1, 101); err != nil {
		t.Fatal(err)
	}
	restore()
	res := f.sync(t, inbox.SyncRequest{})
	if len(res.Dialogs) != 1 || res.Dialogs[0].Unread != 0 || res.Dialogs[0].ReadSeq != 3 {
		t.Fatalf("dialogs after a rollback past the read = %+v, want 0 unread", res.Dialogs)
	}
	f.deliver(t, 1, 4, 4000)
	if res := f.sync(t, inbox.SyncRequest{}); len(res.Dialogs) != 1 || res.Dialogs[0].Unread != 1 {
		t.Fatalf("dialogs after a new message = %+v, want 1 unread", res.Dialogs)
	}
}

func TestSyncRebuildsALostList(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 3)
	f.deliver(t, 1, 1, 1000)
	f.deliver(t, 1, 2, 2000)
	f.deliver(t, 2, 1, 1500)
	if _, _, err := f.reads.Advance(ctx, tenant, 1, 101, 1, 1001); err != nil {
		t.Fatal(err)
	}
	f.dialogs.Forget(tenant) // Redis lost every list

	res := f.sync(t, inbox.SyncRequest{})
	got := map[int64]inbox.Dialog{}
	for _, d := range res.Dialogs {
		got[d.ConversationID] = d
	}
	if len(got) != 2 || got[101].Unread != 1 || got[101].ReadSeq != 1 || got[101].LastSeq != 2 || got[101].Score != 2000 ||
		got[102].Unread != 1 || got[102].Score != 1500 || got[102].Preview.MsgID != 2001 {
		t.Fatalf("rebuilt dialogs = %+v", res.Dialogs)
	}
	if f.metrics.Count("inbox_rebuild_total", "sync") != 1 {
		t.Fatal("the lazy rebuild was not counted")
	}
	f.sync(t, inbox.SyncRequest{})
	if f.metrics.Count("inbox_rebuild_total", "sync") != 1 {
		t.Fatal("a built list was rebuilt again")
	}
	if n, err := f.svc.Rebuild(ctx, tenant, 1); err != nil || n != 2 {
		t.Fatalf("admin rebuild = %d, %v", n, err)
	}
}

func TestSyncPagesTheMailbox(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0)
	var events []mailbox.Event
	for i := range 5 {
		device := uint64(0)
		if i%2 == 1 {
			device = 7
		}
		events = append(events, mailbox.Event{User: 1, Device: device, Type: mailbox.Kick, Payload: json.RawMessage(`{"reason":"x"}`)})
	}
	events = append(events, mailbox.Event{User: 1, Device: 8, Type: mailbox.MissedMessage})
	if _, err := f.mailer.Post(ctx, tenant, events); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	cursor := int64(0)
	for range 5 {
		res := f.sync(t, inbox.SyncRequest{MailboxSeq: cursor, Limit: 2})
		for _, e := range res.Events {
			seqs = append(seqs, e.Seq)
		}
		cursor = res.MailboxSeq
		saved, err := f.mailbox.Cursor(ctx, tenant, 1, 7)
		if err != nil || saved.MailboxSeq != cursor {
			t.Fatalf("saved cursor %+v (%v), want mailbox_seq %d", saved, err, cursor)
		}
		if !res.HasMore {
			break
		}
	}
	if !slices.Equal(seqs, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("device 7 synced seqs %v, want 1-5 (not device 8's)", seqs)
	}
}

func TestSyncRefusesBadRequests(t *testing.T) {
	f := newFixture(t, 0)
	for _, r := range []inbox.SyncRequest{{Limit: -1}, {Limit: inbox.MaxLimit + 1}, {MailboxSeq: -1}, {DialogScore: -1}} {
		r.Tenant, r.User, r.Device = tenant, 1, 7
		if _, err := f.svc.Sync(context.Background(), r); apperr.CodeOf(err) != apperr.InvalidArgument {
			t.Fatalf("Sync(%+v) = %v, want 40001", r, err)
		}
	}
}

func TestSettings(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 1)
	f.deliver(t, 1, 1, 1000)
	if err := f.svc.SetMuted(ctx, tenant, 1, 101, true); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.SetPinned(ctx, tenant, 1, 101, true); err != nil {
		t.Fatal(err)
	}
	d := f.sync(t, inbox.SyncRequest{}).Dialogs[0]
	if !d.Muted || !d.Pinned {
		t.Fatalf("dialog = %+v, want muted and pinned", d)
	}
	for _, err := range []error{f.svc.SetMuted(ctx, tenant, 1, 999, true), f.svc.SetPinned(ctx, tenant, 1, 999, true)} {
		if apperr.CodeOf(err) != apperr.NotFound {
			t.Fatalf("setting a foreign conversation: %v, want 40401", err)
		}
	}
}
