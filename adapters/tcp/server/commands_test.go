package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

const (
	groupTopic = "grp_100"
	p2pTopic   = "p2p_1_2"
)

// stack is the send and history use cases over the in-memory adapters, with users 1 and 2
// as friends and both in group 100; user 3 is a stranger.
type stack struct {
	deps  Deps
	queue *memory.DeliverQueue
	// send is what deps.Send was made of, for a test that needs a send path of its own.
	send send.Deps
}

// newStack wires the core services over memory adapters; wrap, when given, replaces the
// message store's Append path (see appendIndex).
func newStack(t *testing.T, wrap ...func(ports.MessageStore) ports.MessageStore) stack {
	t.Helper()
	ctx := t.Context()
	clock := memory.NewClock(testTime)
	months := memory.NewMonthState(clock.Now)
	shards := memory.NewShardStore()
	m := month.Of(testTime)
	if err := shards.EnsureTable(ctx, "default", m); err != nil {
		t.Fatal(err)
	}
	if err := months.MarkReady(ctx, "default", 0, m); err != nil {
		t.Fatal(err)
	}
	if _, err := months.Advance(ctx, "default", 0, m); err != nil {
		t.Fatal(err)
	}
	dir := memory.NewDirectory()
	for _, u := range []int64{1, 2, 3} {
		if err := dir.CreateUser(ctx, "default", social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dir.AddFriendship(ctx, "default", 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.CreateGroup(ctx, "default", social.Group{ID: 100, Owner: 1}, 5000, []int64{1, 2}, 0); err != nil {
		t.Fatal(err)
	}
	ids := memory.NewIDs(clock)
	metrics := memory.NewMetrics()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	resolver := conversation.NewResolver(dir, ids, membership.New(dir, clock, time.Minute))
	var store ports.MessageStore = memory.NewMessageStore(shards)
	for _, w := range wrap {
		store = w(store)
	}
	routes := memory.NewRouteCache()
	queue := memory.NewDeliverQueue(clock.Now)
	seqs := memory.NewSeqAllocator(months, clock.Now)
	sendDeps := send.Deps{
		Seq: seqs, Store: store, FollowUp: &memory.CommitFollowUp{Routes: routes, Queue: queue, Seqs: seqs},
		IDs: ids, Clock: clock, Metrics: metrics, Resolver: resolver, Log: log,
	}
	return stack{
		queue: queue,
		send:  sendDeps,
		deps: Deps{
			Send: send.New(send.Config{MsgIDWindow: 5 * time.Minute}, sendDeps),
			History: history.New(history.Deps{
				Store: store, Routes: routes, Months: months, Metrics: metrics, Resolver: resolver, Log: log,
			}),
			IDs:   ids,
			Clock: clock,
		},
	}
}

func text(s string) json.RawMessage {
	raw, _ := json.Marshal(map[string]string{"text": s})
	return raw
}

func TestSendMessage(t *testing.T) {
	st := newStack(t)
	h := start(t, Config{}, st.deps)
	alice, stranger := h.dial(t), h.dial(t)
	alice.auth(1, 7)
	stranger.auth(3, 1)

	f, env := alice.call(wire.CmdSendMessage, wire.SendMessageRequest{ToUser: 2, ClientMsgID: "m1", Type: "text", Content: text("hi")})
	if f.Command != wire.CmdSendAck {
		t.Fatalf("answer on command %d, want SEND_ACK", f.Command)
	}
	var ack wire.SendAck
	decodeData(t, env, &ack)
	if ack.Topic != p2pTopic || ack.Seq != 1 || ack.MsgID <= 0 || ack.ClientMsgID != "m1" || ack.ConversationID == 0 ||
		ack.ServerTime != testTime.UnixMilli() {
		t.Fatalf("ack %+v", ack)
	}

	job, ok, err := st.queue.Take(t.Context(), "default", 0, time.Second)
	if err != nil || !ok {
		t.Fatalf("deliver job: %v %v", ok, err)
	}
	if job.MsgID != ack.MsgID || job.From != 1 || job.ExcludeDevice != 7 {
		t.Fatalf("deliver job %+v: want msg %d from user 1 excluding device 7", job, ack.MsgID)
	}

	t.Run("retry returns the same message", func(t *testing.T) {
		_, env := alice.call(wire.CmdSendMessage, wire.SendMessageRequest{ToUser: 2, ClientMsgID: "m1", Type: "text", Content: text("hi")})
		var again wire.SendAck
		decodeData(t, env, &again)
		if again.MsgID != ack.MsgID || again.Seq != ack.Seq {
			t.Fatalf("retry ack %+v, want msg %d seq %d", again, ack.MsgID, ack.Seq)
		}
	})
	t.Run("pre-generated msg_id", func(t *testing.T) {
		_, env := alice.call(wire.CmdGenerateMsgID, struct{}{})
		var gen wire.GenerateMsgIDResponse
		decodeData(t, env, &gen)
		_, env = alice.call(wire.CmdSendMessage, wire.SendMessageRequest{Topic: groupTopic, ClientMsgID: "g1", MsgID: gen.MsgID, Type: "text", Content: text("group")})
		var gack wire.SendAck
		decodeData(t, env, &gack)
		if gack.MsgID != gen.MsgID || gack.Topic != groupTopic || gack.ConversationID != 5000 || gack.Seq != 1 {
			t.Fatalf("ack %+v, want msg_id %d in %s", gack, gen.MsgID, groupTopic)
		}
	})

	refusals := []struct {
		name     string
		client   *rawClient
		body     any
		wantCode int
	}{
		{"bad JSON", alice, "not an object", wire.CodeInvalidArgument},
		{"unknown type", alice, wire.SendMessageRequest{ToUser: 2, ClientMsgID: "x", Type: "hologram", Content: text("x")}, wire.CodeInvalidArgument},
		{"no address", alice, wire.SendMessageRequest{ClientMsgID: "x", Type: "text", Content: text("x")}, wire.CodeInvalidArgument},
		// PROTOCOL §4: one address; the topic is not silently preferred.
		{"topic and to_user", alice, wire.SendMessageRequest{Topic: groupTopic, ToUser: 2, ClientMsgID: "x2", Type: "text", Content: text("x")}, wire.CodeInvalidArgument},
		{"topic and conversation_id", alice, wire.SendMessageRequest{Topic: groupTopic, ConversationID: 1, ClientMsgID: "x3", Type: "text", Content: text("x")}, wire.CodeInvalidArgument},
		{"not a member", stranger, wire.SendMessageRequest{Topic: groupTopic, ClientMsgID: "x", Type: "text", Content: text("x")}, wire.CodeForbidden},
		{"not friends", stranger, wire.SendMessageRequest{ToUser: 1, ClientMsgID: "x", Type: "text", Content: text("x")}, wire.CodeForbidden},
		{"same client_msg_id, other content", alice, wire.SendMessageRequest{ToUser: 2, ClientMsgID: "m1", Type: "text", Content: text("changed")}, wire.CodeConflict},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			f, env := tt.client.call(wire.CmdSendMessage, tt.body)
			if f.Command != wire.CmdSendAck || env.Code != tt.wantCode || string(env.Data) != "null" {
				t.Fatalf("got command %d code %d %q data %s, want SEND_ACK %d", f.Command, env.Code, env.Msg, env.Data, tt.wantCode)
			}
		})
	}
}

// sendN sends n messages with the given text to the group; each must be acknowledged.
func sendN(t *testing.T, c *rawClient, n int, body string) {
	t.Helper()
	for i := range n {
		_, env := c.call(wire.CmdSendMessage, wire.SendMessageRequest{
			Topic: groupTopic, ClientMsgID: "c" + strconv.Itoa(i), Type: "text", Content: text(body),
		})
		if env.Code != wire.CodeOK {
			t.Fatalf("send %d: code %d %q", i, env.Code, env.Msg)
		}
	}
}

// syncAll sends SYNC_MESSAGES and collects the pages up to the FINISH frame.
func syncAll(t *testing.T, c *rawClient, req wire.SyncMessagesRequest) (pages int, msgs []wire.Message, finish wire.Envelope) {
	t.Helper()
	seq := c.send(wire.CmdSyncMessages, req)
	for {
		f := c.read()
		if f.SequenceID != seq {
			t.Fatalf("sync frame sequence_id %d, want %d", f.SequenceID, seq)
		}
		env := envelope(t, f)
		switch f.Command {
		case wire.CmdSyncMessages:
			var page wire.SyncMessagesPage
			decodeData(t, env, &page)
			pages++
			msgs = append(msgs, page.Messages...)
		case wire.CmdSyncMessagesFinish:
			return pages, msgs, env
		default:
			t.Fatalf("unexpected command %d during sync", f.Command)
		}
	}
}

func TestSyncMessages(t *testing.T) {
	st := newStack(t)
	h := start(t, Config{}, st.deps)
	c := h.dial(t)
	c.auth(2, 1)
	sendN(t, c, 3, "hello")

	tests := []struct {
		name      string
		req       wire.SyncMessagesRequest
		wantPages int
		wantSeqs  []int64
		want      wire.SyncMessagesFinish
		wantCode  int
	}{
		{"all", wire.SyncMessagesRequest{Topic: groupTopic}, 1, []int64{1, 2, 3},
			wire.SyncMessagesFinish{Topic: groupTopic, LastSeq: 3}, 0},
		{"one page of two", wire.SyncMessagesRequest{Topic: groupTopic, SinceSeq: 0, Limit: 2}, 1, []int64{1, 2},
			wire.SyncMessagesFinish{Topic: groupTopic, LastSeq: 2, HasMore: true}, 0},
		{"nothing new: no page", wire.SyncMessagesRequest{Topic: groupTopic, SinceSeq: 3}, 0, nil,
			wire.SyncMessagesFinish{Topic: groupTopic, LastSeq: 3}, 0},
		{"limit over 200", wire.SyncMessagesRequest{Topic: groupTopic, Limit: 500}, 0, nil, wire.SyncMessagesFinish{}, wire.CodeInvalidArgument},
		{"not a member", wire.SyncMessagesRequest{Topic: "grp_999"}, 0, nil, wire.SyncMessagesFinish{}, wire.CodeForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pages, msgs, env := syncAll(t, c, tt.req)
			if env.Code != tt.wantCode || pages != tt.wantPages || len(msgs) != len(tt.wantSeqs) {
				t.Fatalf("code %d pages %d messages %d; want code %d pages %d messages %d", env.Code, pages, len(msgs), tt.wantCode, tt.wantPages, len(tt.wantSeqs))
			}
			for i, m := range msgs {
				if m.Seq != tt.wantSeqs[i] || m.From != 2 || m.Topic != groupTopic || string(m.Content) != string(text("hello")) {
					t.Fatalf("message %d: %+v", i, m)
				}
			}
			if tt.wantCode != 0 {
				return
			}
			var finish wire.SyncMessagesFinish
			decodeData(t, env, &finish)
			if finish != tt.want {
				t.Fatalf("finish %+v, want %+v", finish, tt.want)
			}
		})
	}
}

func TestGetHistory(t *testing.T) {
	st := newStack(t)
	h := start(t, Config{}, st.deps)
	c := h.dial(t)
	c.auth(1, 1)
	sendN(t, c, 5, "hello")

	tests := []struct {
		name     string
		req      wire.GetHistoryRequest
		wantSeqs []int64
		wantCode int
	}{
		{"newest first", wire.GetHistoryRequest{Topic: groupTopic}, []int64{5, 4, 3, 2, 1}, 0},
		{"before a seq", wire.GetHistoryRequest{Topic: groupTopic, BeforeSeq: 4, Limit: 2}, []int64{3, 2}, 0},
		{"bad limit", wire.GetHistoryRequest{Topic: groupTopic, Limit: -1}, nil, wire.CodeInvalidArgument},
		{"bad topic", wire.GetHistoryRequest{Topic: "nope"}, nil, wire.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, env := c.call(wire.CmdGetHistory, tt.req)
			if f.Command != wire.CmdGetHistory || env.Code != tt.wantCode {
				t.Fatalf("command %d code %d %q, want 18 and %d", f.Command, env.Code, env.Msg, tt.wantCode)
			}
			if tt.wantCode != 0 {
				return
			}
			var resp wire.GetHistoryResponse
			decodeData(t, env, &resp)
			var seqs []int64
			for _, m := range resp.Messages {
				seqs = append(seqs, m.Seq)
			}
			if len(seqs) != len(tt.wantSeqs) {
				t.Fatalf("seqs %v, want %v", seqs, tt.wantSeqs)
			}
			for i := range seqs {
				if seqs[i] != tt.wantSeqs[i] {
					t.Fatalf("seqs %v, want %v", seqs, tt.wantSeqs)
				}
			}
		})
	}
}

// Pages that would not fit one 64 KiB frame are split (sync) or shortened (history).
func TestLargePagesFitFrames(t *testing.T) {
	const n = 20
	st := newStack(t)
	h := start(t, Config{CompressMin: -1}, st.deps)
	c := h.dial(t)
	c.auth(1, 1)
	sendN(t, c, n, strings.Repeat("y", 10<<10))

	pages, msgs, env := syncAll(t, c, wire.SyncMessagesRequest{Topic: groupTopic, Limit: n})
	if env.Code != wire.CodeOK || pages < 4 || len(msgs) != n {
		t.Fatalf("sync: code %d, %d pages, %d messages; want several pages with all %d", env.Code, pages, len(msgs), n)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d: pages out of order", i, m.Seq)
		}
	}

	_, env = c.call(wire.CmdGetHistory, wire.GetHistoryRequest{Topic: groupTopic, Limit: n})
	var resp wire.GetHistoryResponse
	decodeData(t, env, &resp)
	if len(resp.Messages) == 0 || len(resp.Messages) >= n || resp.Messages[0].Seq != n {
		t.Fatalf("history returned %d messages starting at %d; want fewer than %d, newest first", len(resp.Messages), resp.Messages[0].Seq, n)
	}
}
