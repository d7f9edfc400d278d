package forward_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/forward"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/send"
)

const tenant = "t1"

// world is one tenant on the memory fakes: users 1 and 2 are friends and in group 10 (grp_10),
// user 3 is in group 11 alone, user 2 hid seq 2 of grp_10 for themself.
type world struct {
	send    *send.Service
	history *history.Service
	svc     *forward.Service
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Date(2026, 9, 15, 12, 0, 0, 0, time.UTC))
	shards, metrics := memory.NewShardStore(), memory.NewMetrics()
	months := memory.NewMonthState(clock.Now)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	manager := shardmanager.New(shardmanager.Config{}, shardmanager.Deps{Store: shards, Months: months, Metrics: metrics, Log: log})
	if err := manager.Ensure(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	dir, ids, routes, store := memory.NewDirectory(), memory.NewIDs(clock), memory.NewRouteCache(), memory.NewMessageStore(shards)
	resolver := conversation.NewResolver(dir, ids, membership.New(dir, clock, time.Second))
	seqs := memory.NewSeqAllocator(months, clock.Now)
	w := &world{}
	w.send = send.New(send.Config{MsgIDWindow: 5 * time.Minute}, send.Deps{
		Seq: seqs, Store: store, FollowUp: &memory.CommitFollowUp{Routes: routes, Queue: memory.NewDeliverQueue(clock.Now), Seqs: seqs},
		IDs: ids, Clock: clock, Metrics: metrics, Resolver: resolver, Log: log, Months: manager,
	})
	w.history = history.New(history.Deps{Store: store, Routes: routes, Months: months, Metrics: metrics, Resolver: resolver, Log: log})
	dellog := memory.NewDeleteLog(shards)
	w.svc = forward.New(forward.Deps{Messages: w.history, Hidden: dellog, Sender: w.send})
	for _, u := range []int64{1, 2, 3} {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dir.AddFriendship(ctx, tenant, 1, 2); err != nil {
		t.Fatal(err)
	}
	for g, members := range map[int64][]int64{10: {1, 2}, 11: {3}} {
		if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: g, Owner: members[0]}, 5000+g, members[1:], 0); err != nil {
			t.Fatal(err)
		}
	}
	for i, text := range []string{"first", "hidden"} {
		content, _ := json.Marshal(map[string]string{"text": text})
		if _, err := w.send.Send(ctx, send.Request{
			Tenant: tenant, From: 1, FromDevice: 1, Address: conversation.Address{Topic: "grp_10"},
			Draft: message.Draft{ClientMsgID: text, Type: "text", Content: content},
		}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if err := dellog.HideRange(ctx, tenant, "grp_10", 2, 2, 3); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestForward(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	req := func(user int64, seq int64, to string, id string) forward.Request {
		return forward.Request{Tenant: tenant, User: user, Device: 1, Topic: "grp_10", Seq: seq, To: conversation.Address{Topic: to}, ClientMsgID: id}
	}
	for _, tt := range []struct {
		name string
		req  forward.Request
		code apperr.Code
	}{
		{"not a member of the origin", req(3, 1, "grp_11", "f1"), apperr.Forbidden},
		{"unknown seq", req(2, 99, "p2p_1_2", "f2"), apperr.NotFound},
		{"hidden by the forwarder", req(2, 2, "p2p_1_2", "f3"), apperr.NotFound},
		{"into a conversation the forwarder is not in", req(2, 1, "grp_11", "f4"), apperr.Forbidden},
		{"seq zero", req(2, 0, "p2p_1_2", "f5"), apperr.InvalidArgument},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := w.svc.Forward(ctx, tt.req); apperr.CodeOf(err) != tt.code {
				t.Fatalf("err = %v, want %d", err, tt.code)
			}
		})
	}
	first, err := w.svc.Forward(ctx, req(2, 1, "p2p_1_2", "fw"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := w.svc.Forward(ctx, req(2, 1, "p2p_1_2", "fw"))
	if err != nil || again.Message.Seq != first.Message.Seq {
		t.Fatalf("retry: seq %d, %v; want the first copy's seq %d", again.Message.Seq, err, first.Message.Seq)
	}
	copied, err := w.history.Get(ctx, tenant, 1, "p2p_1_2", first.Message.Seq)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := w.history.Get(ctx, tenant, 1, "grp_10", 1)
	if err != nil {
		t.Fatal(err)
	}
	var content struct {
		Text    string         `json:"text"`
		Forward forward.Origin `json:"forward"`
	}
	if err := json.Unmarshal(copied.Content, &content); err != nil {
		t.Fatal(err)
	}
	want := forward.Origin{Topic: "grp_10", Seq: 1, MsgID: orig.MsgID, From: 1}
	if copied.Type != "text" || copied.From != 2 || content.Text != "first" || content.Forward != want {
		t.Fatalf("copy %s from %d: %s, want the text with forward %+v", copied.Type, copied.From, copied.Content, want)
	}
}
