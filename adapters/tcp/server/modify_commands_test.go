package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/modify"
	"github.com/imdhq/imd/core/usecase/send"
)

// newModifyDeps is the send, history and modify use cases over the in-memory adapters, with
// users 1 and 2 in group 100, which 1 owns; user 3 is a stranger.
func newModifyDeps(t *testing.T) Deps {
	t.Helper()
	ctx := t.Context()
	clock := memory.NewClock(testTime)
	months := memory.NewMonthState(clock.Now)
	shards := memory.NewShardStore()
	if err := shards.EnsureTable(ctx, "default", month.Of(testTime)); err != nil {
		t.Fatal(err)
	}
	if err := months.MarkReady(ctx, "default", 0, month.Of(testTime)); err != nil {
		t.Fatal(err)
	}
	if _, err := months.Advance(ctx, "default", 0, month.Of(testTime)); err != nil {
		t.Fatal(err)
	}
	dir := memory.NewDirectory()
	for _, u := range []int64{1, 2, 3} {
		if err := dir.CreateUser(ctx, "default", social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dir.CreateGroup(ctx, "default", social.Group{ID: 100, Owner: 1}, 5000, []int64{2}, 0); err != nil {
		t.Fatal(err)
	}
	ids := memory.NewIDs(clock)
	metrics := memory.NewMetrics()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	resolver := conversation.NewResolver(dir, ids, membership.New(dir, clock, time.Minute))
	store := memory.NewMessageStore(shards)
	routes := memory.NewRouteCache()
	seqs := memory.NewSeqAllocator(months, clock.Now)
	sender := send.New(send.Config{MsgIDWindow: 5 * time.Minute}, send.Deps{
		Seq: seqs, Store: store, FollowUp: &memory.CommitFollowUp{Routes: routes, Queue: memory.NewDeliverQueue(clock.Now), Seqs: seqs},
		IDs: ids, Clock: clock, Metrics: metrics, Resolver: resolver, Log: log,
	})
	hist := history.New(history.Deps{Store: store, Routes: routes, Months: months, Metrics: metrics, Resolver: resolver, Log: log})
	return Deps{
		Send: sender, History: hist, IDs: ids, Clock: clock,
		Modify: modify.New(modify.Config{}, modify.Deps{
			Editor: memory.NewMessageEditor(shards), DeleteLog: memory.NewDeleteLog(shards), Store: store, Owners: dir,
			Locator: hist, Events: sender, Resolver: resolver, Clock: clock, Metrics: metrics, Log: log,
		}),
	}
}

// TestModifyCommands checks the wire side of RECALL_MESSAGE, EDIT_MESSAGE and DELETE_MESSAGES:
// bodies, answer commands and codes. The rules themselves are core/usecase/modify's tests.
func TestModifyCommands(t *testing.T) {
	h := start(t, Config{}, newModifyDeps(t))
	owner, member := h.dial(t), h.dial(t)
	owner.auth(1, 1)
	member.auth(2, 1)
	sendN(t, member, 4, "hello")

	tests := []struct {
		name     string
		client   *rawClient
		cmd      uint16
		body     any
		wantCode int
		check    func(t *testing.T, data json.RawMessage)
	}{
		{"recall answers the recalled message", member, wire.CmdRecallMessage, wire.RecallRequest{Topic: groupTopic, Seq: 1}, wire.CodeOK,
			wantMessage(func(m wire.Message) bool {
				return m.Seq == 1 && m.Status == wire.StatusRecalled && m.Version == 2
			})},
		{"recall by another member", owner, wire.CmdRecallMessage, wire.RecallRequest{Topic: groupTopic, Seq: 2}, wire.CodeForbidden, nil},
		{"recall of bad JSON", member, wire.CmdRecallMessage, "nope", wire.CodeInvalidArgument, nil},
		{"edit answers the edited message", member, wire.CmdEditMessage, wire.EditRequest{Topic: groupTopic, Seq: 2, Content: text("fixed"), Version: 1}, wire.CodeOK,
			wantMessage(func(m wire.Message) bool { return m.Seq == 2 && m.Version == 2 && m.EditedAt != nil })},
		{"edit with a stale version", member, wire.CmdEditMessage, wire.EditRequest{Topic: groupTopic, Seq: 2, Content: text("again"), Version: 1}, wire.CodeConflict, nil},
		{"delete for oneself answers {}", member, wire.CmdDeleteMessages, wire.DeleteRequest{Topic: groupTopic, Low: 3, Hi: 4}, wire.CodeOK, wantEmpty},
		{"delete with an empty range", member, wire.CmdDeleteMessages, wire.DeleteRequest{Topic: groupTopic, Low: 3, Hi: 3}, wire.CodeInvalidArgument, nil},
		{"delete for all by the owner answers {}", owner, wire.CmdDeleteMessages, map[string]any{"topic": groupTopic, "low": 4, "hi": 5, "for_all": true}, wire.CodeOK, wantEmpty},
		{"delete for all of a range", owner, wire.CmdDeleteMessages, map[string]any{"topic": groupTopic, "low": 1, "hi": 3, "for_all": true}, wire.CodeInvalidArgument, nil},
		{"delete for all by a stranger", h.dialAs(t, 3), wire.CmdDeleteMessages, map[string]any{"topic": groupTopic, "low": 2, "hi": 3, "for_all": true}, wire.CodeForbidden, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, env := tt.client.call(tt.cmd, tt.body)
			if f.Command != tt.cmd || env.Code != tt.wantCode {
				t.Fatalf("got command %d code %d %q, want command %d code %d", f.Command, env.Code, env.Msg, tt.cmd, tt.wantCode)
			}
			if tt.wantCode != wire.CodeOK {
				if string(env.Data) != "null" {
					t.Fatalf("error data %s, want null", env.Data)
				}
				return
			}
			tt.check(t, env.Data)
		})
	}
	t.Run("the member's sync shows every change", func(t *testing.T) {
		_, msgs, _ := syncAll(t, member, wire.SyncMessagesRequest{Topic: groupTopic})
		got := make(map[int64]wire.Message)
		for _, m := range msgs {
			got[m.Seq] = m
		}
		if got[1].Status != wire.StatusRecalled || got[2].Version != 2 || got[4].Status != wire.StatusDeleted {
			t.Fatalf("sync: %+v", msgs)
		}
		if _, hidden := got[3]; hidden {
			t.Fatal("seq 3 was deleted for this member")
		}
		events := 0
		for _, m := range msgs {
			if m.Type == wire.TypeSystem {
				events++
			}
		}
		if events != 3 {
			t.Fatalf("%d topic events, want 3 (recall, edit, delete)", events)
		}
	})
}

func (h *harness) dialAs(t *testing.T, user int64) *rawClient {
	t.Helper()
	c := h.dial(t)
	c.auth(user, 1)
	return c
}

func wantMessage(ok func(wire.Message) bool) func(t *testing.T, data json.RawMessage) {
	return func(t *testing.T, data json.RawMessage) {
		t.Helper()
		var m wire.Message
		if err := json.Unmarshal(data, &m); err != nil || !ok(m) {
			t.Fatalf("message %s (%v)", data, err)
		}
	}
}

func wantEmpty(t *testing.T, data json.RawMessage) {
	t.Helper()
	if string(data) != "{}" {
		t.Fatalf("data %s, want {}", data)
	}
}
