package read_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/read"
	"github.com/imdhq/imd/core/usecase/send"
)

const tenant = "t1"

// fixture: users 1-3; group 10 (conversation 5000) of users 1 and 2 with three messages from
// user 1; group 11 (conversation 6000) of users 1 and 3 with one message.
type fixture struct {
	dialogs *memory.DialogStore
	queue   *memory.DeliverQueue
	svc     *read.Service
	group   []message.Message // the three messages of group 10
	other   message.Message   // the message of group 11
	manager *shardmanager.Manager
	sender  *send.Service
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	shards := memory.NewShardStore()
	store := memory.NewMessageStore(shards)
	months := memory.NewMonthState(clock.Now)
	dir := memory.NewDirectory()
	metrics := memory.NewMetrics()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids := memory.NewIDs(clock)
	routes := memory.NewRouteCache()
	manager := shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{Store: shards, Months: months, Metrics: metrics, Log: log, Sleep: clock.Sleep})
	if err := manager.Ensure(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	resolver := conversation.NewResolver(dir, ids, membership.New(dir, clock, time.Second))
	f := &fixture{dialogs: memory.NewDialogStore(clock.Now), queue: memory.NewDeliverQueue(clock.Now), manager: manager}
	seqs := memory.NewSeqAllocator(months, clock.Now)
	sender := send.New(send.Config{MsgIDWindow: time.Minute}, send.Deps{
		Seq: seqs, Store: store, FollowUp: &memory.CommitFollowUp{Routes: routes, Queue: memory.NewDeliverQueue(clock.Now), Seqs: seqs},
		IDs: ids, Clock: clock, Metrics: metrics, Resolver: resolver, Log: log, Months: manager,
	})
	f.sender = sender
	hist := history.New(history.Deps{Store: store, Routes: routes, Months: months, Metrics: metrics, Resolver: resolver, Log: log})
	f.svc = read.New(read.Deps{
		Resolver: resolver, History: hist, Finder: store, IDs: ids, Shards: shards, Reads: memory.NewReadStore(dir, shards),
		Dialogs: f.dialogs, Queue: f.queue, Log: log,
	})
	for u := int64(1); u <= 3; u++ {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	groups := []struct {
		id, conv int64
		members  []int64
		messages int
	}{{10, 5000, []int64{2}, 3}, {11, 6000, []int64{3}, 1}}
	for _, g := range groups {
		c, err := dir.CreateGroup(ctx, tenant, social.Group{ID: g.id, Owner: 1}, g.conv, g.members, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range g.messages {
			clock.Advance(time.Second)
			res, err := sender.Send(ctx, send.Request{
				Tenant: tenant, From: 1, FromDevice: 1, Address: conversation.Address{Topic: c.Topic},
				Draft: message.Draft{ClientMsgID: c.Topic + string(rune('a'+i)), Type: "text", Content: json.RawMessage(`{"text":"hi"}`)},
			})
			if err != nil {
				t.Fatal(err)
			}
			if g.id == 10 {
				f.group = append(f.group, res.Message)
			} else {
				f.other = res.Message
			}
		}
	}
	return f
}

func TestReadForms(t *testing.T) {
	type want struct {
		code apperr.Code
		seq  int64
	}
	cases := []struct {
		name string
		user int64
		req  func(f *fixture) read.Request
		want want
	}{
		{"topic and seq", 2, func(f *fixture) read.Request { return read.Request{Topic: "grp_10", Seq: 2} }, want{seq: 2}},
		{"conversation and msg_id", 2, func(f *fixture) read.Request {
			return read.Request{ConversationID: 5000, MsgID: f.group[2].MsgID}
		}, want{seq: 3}},
		{"conversation, last_msg_id and peer_id", 2, func(f *fixture) read.Request {
			return read.Request{ConversationID: 5000, LastMsgID: f.group[1].MsgID}
		}, want{seq: 2}},
		{"msg_id wins over last_msg_id", 2, func(f *fixture) read.Request {
			return read.Request{ConversationID: 5000, MsgID: f.group[2].MsgID, LastMsgID: f.group[0].MsgID}
		}, want{seq: 3}},
		{"last_msg_id when msg_id is not positive", 2, func(f *fixture) read.Request {
			return read.Request{ConversationID: 5000, MsgID: -1, LastMsgID: f.group[0].MsgID}
		}, want{seq: 1}},
		{"conversation_id missing", 2, func(f *fixture) read.Request { return read.Request{MsgID: f.group[0].MsgID} }, want{code: apperr.InvalidArgument}},
		{"both message ids not positive", 2, func(f *fixture) read.Request {
			return read.Request{ConversationID: 5000, MsgID: 0, LastMsgID: -3}
		}, want{code: apperr.InvalidArgument}},
		{"topic without seq", 2, func(f *fixture) read.Request { return read.Request{Topic: "grp_10"} }, want{code: apperr.InvalidArgument}},
		{"invalid topic", 2, func(f *fixture) read.Request { return read.Request{Topic: "grp_x", Seq: 1} }, want{code: apperr.InvalidArgument}},
		{"message not found", 2, func(f *fixture) read.Request { return read.Request{ConversationID: 5000, MsgID: 12345} }, want{code: apperr.NotFound}},
		{"seq not stored", 2, func(f *fixture) read.Request { return read.Request{Topic: "grp_10", Seq: 99} }, want{code: apperr.NotFound}},
		{"conversation not found", 2, func(f *fixture) read.Request {
			return read.Request{ConversationID: 999, MsgID: f.group[0].MsgID}
		}, want{code: apperr.NotFound}},
		{"message of another conversation", 1, func(f *fixture) read.Request {
			return read.Request{ConversationID: 5000, MsgID: f.other.MsgID}
		}, want{code: apperr.InvalidArgument}},
		{"not a member, by id", 3, func(f *fixture) read.Request {
			return read.Request{ConversationID: 5000, MsgID: f.group[0].MsgID}
		}, want{code: apperr.Forbidden}},
		{"not a member, by topic", 3, func(f *fixture) read.Request { return read.Request{Topic: "grp_10", Seq: 1} }, want{code: apperr.Forbidden}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			r := c.req(f)
			r.Tenant, r.User, r.Device = tenant, c.user, 7
			w, err := f.svc.Read(context.Background(), r)
			if code := apperr.CodeOf(err); code != c.want.code {
				t.Fatalf("code = %d (%v), want %d", code, err, c.want.code)
			}
			if err != nil {
				if _, queued, _ := f.queue.Take(context.Background(), tenant, 0, 0); queued {
					t.Fatal("a refused read enqueued a job")
				}
				return
			}
			m := f.group[c.want.seq-1]
			if w != (dialog.Watermark{Topic: "grp_10", ConversationID: 5000, Seq: m.Seq, MsgID: m.MsgID}) {
				t.Fatalf("watermark = %+v, want seq %d msg %d of grp_10", w, m.Seq, m.MsgID)
			}
		})
	}
}

func TestReadWatermarkNeverMovesBackAndNotifiesOtherDevices(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// User 2 has two unread messages in its list.
	for i, m := range f.group[:2] {
		_, err := f.dialogs.Apply(ctx, tenant, dialog.Update{
			ConversationID: 5000, Score: m.CreatedAt.UnixMilli(), Sender: 1, Preview: dialog.PreviewOf(m),
			Once: "m" + string(rune('0'+i)), OnceTTL: time.Minute, Batches: []dialog.Batch{{Users: []int64{2}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	reads := []struct {
		seq      int64
		wantSeq  int64
		advanced bool
	}{{2, 2, true}, {1, 2, false}, {2, 2, false}, {3, 3, true}}
	for _, r := range reads {
		w, err := f.svc.Read(ctx, read.Request{Tenant: tenant, User: 2, Device: 7, Topic: "grp_10", Seq: r.seq})
		if err != nil {
			t.Fatal(err)
		}
		if w.Seq != r.wantSeq || w.MsgID != f.group[r.wantSeq-1].MsgID {
			t.Fatalf("read %d: watermark %+v, want seq %d", r.seq, w, r.wantSeq)
		}
		job, queued, err := f.queue.Take(ctx, tenant, 0, 0)
		if err != nil || queued != r.advanced {
			t.Fatalf("read %d: job queued = %v (%v), want %v", r.seq, queued, err, r.advanced)
		}
		if !queued {
			continue
		}
		var pushed struct {
			Topic          string `json:"topic"`
			ConversationID int64  `json:"conversation_id"`
			Seq            int64  `json:"seq"`
			MsgID          int64  `json:"msg_id"`
		}
		if err := json.Unmarshal(job.Event, &pushed); err != nil || pushed.Seq != r.wantSeq || pushed.Topic != "grp_10" || pushed.ConversationID != 5000 || pushed.MsgID != w.MsgID {
			t.Fatalf("read job data %s (%v)", job.Event, err)
		}
		if job.Kind != delivery.KindRead || job.From != 2 || job.ExcludeDevice != 7 || !job.NotPush || !job.NotMailbox ||
			len(job.Recipients) != 1 || job.Recipients[0] != 2 {
			t.Fatalf("read job = %+v", job)
		}
	}
	entries, err := f.dialogs.Changed(ctx, tenant, 2, 0, 10)
	if err != nil || len(entries) != 1 || entries[0].Unread != 0 {
		t.Fatalf("list after reads = %+v, %v; want the dialog with nothing unread", entries, err)
	}
}

// After an operator moved the month ahead early, a message is written to that later month; a
// READ by its msg_id finds it there, however far ahead, not only near its id's calendar month.
func TestReadByMsgIDAfterAnEarlyMonthSwitch(t *testing.T) {
	ctx := context.Background()
	for _, ahead := range []int{1, 2, 5} {
		t.Run(fmt.Sprint(ahead, " months ahead"), func(t *testing.T) {
			f := newFixture(t)
			target := f.group[0].Month.Add(ahead)
			if _, err := f.manager.Advance(ctx, tenant, target); err != nil {
				t.Fatal(err)
			}
			res, err := f.sender.Send(ctx, send.Request{
				Tenant: tenant, From: 1, FromDevice: 1, Address: conversation.Address{Topic: "grp_10"},
				Draft: message.Draft{ClientMsgID: "ahead", Type: "text", Content: json.RawMessage(`{"text":"ahead"}`)},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Message.Month != target {
				t.Fatalf("sent into %s, want %s", res.Message.Month, target)
			}
			w, err := f.svc.Read(ctx, read.Request{Tenant: tenant, User: 2, Device: 7, ConversationID: 5000, MsgID: res.Message.MsgID})
			if err != nil || w.Seq != res.Message.Seq || w.MsgID != res.Message.MsgID {
				t.Fatalf("READ by msg_id = %+v, %v; want seq %d", w, err, res.Message.Seq)
			}
			_, err = f.svc.Read(ctx, read.Request{Tenant: tenant, User: 2, Device: 7, ConversationID: 5000, MsgID: res.Message.MsgID + 1})
			if code := apperr.CodeOf(err); code != apperr.NotFound {
				t.Fatalf("READ of an id nowhere = %v, want not found", err)
			}
		})
	}
}
