package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// Read receipts across two nodes (issue 31, PROTOCOL RECEIPT and READ_STATE): in P2P the
// sender on node 1 learns of its peer's deliveries and reads on node 2; in a group the sender
// reads "read by K of N" and the readers from the members' read marks; hide_receipts stops a
// user's reads; bad input gets its code.
func TestReceiptsAcrossNodes(t *testing.T) {
	nodes := startNodes(t, 2, nil)
	one, two := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const alice, bob, carol, dave = 320, 321, 322, 323
	ta, tb, tc := one.User(alice), one.User(bob), one.User(carol)
	one.User(dave)
	one.MustAdmin("POST", "/friendships", map[string]any{"user_a": alice, "user_b": bob}, nil)
	group := one.Group(32, alice, bob, carol, dave)

	a := one.ConnectLive(ctx, ta, 1) // the sender, on node 1, subscribed to RECEIPT
	b := two.Connect(ctx, tb, 1)     // the peer, on node 2; the Go client answers each MESSAGE with PUSH_ACK
	c := two.Connect(ctx, tc, 1)
	send := func(req wire.SendMessageRequest) wire.SendAck {
		t.Helper()
		req.Type, req.Content = "text", json.RawMessage(`{"text":"hi"}`)
		ack, err := a.Send(ctx, req)
		if err != nil {
			t.Fatalf("send %+v: %v", req, err)
		}
		return ack
	}
	receipt := func(match func(wire.Receipt) bool) wire.Receipt {
		t.Helper()
		return awaitData(t, a, wire.CmdReceipt, 15*time.Second, match)
	}

	// P2P: delivered (bob's device acknowledged the MESSAGE), then read, both across nodes.
	first := send(wire.SendMessageRequest{ToUser: bob, ClientMsgID: "r-1"})
	got := receipt(func(r wire.Receipt) bool { return r.DeliveredSeq > 0 })
	if got != (wire.Receipt{Topic: first.Topic, ConversationID: first.ConversationID, UserID: bob, DeliveredSeq: first.Seq}) {
		t.Fatalf("delivered receipt %+v for %+v", got, first)
	}
	if _, err := b.MarkRead(ctx, first.Topic, first.Seq); err != nil {
		t.Fatal(err)
	}
	got = receipt(func(r wire.Receipt) bool { return r.ReadSeq > 0 })
	if got != (wire.Receipt{Topic: first.Topic, ConversationID: first.ConversationID, UserID: bob, ReadSeq: first.Seq}) {
		t.Fatalf("read receipt %+v for %+v", got, first)
	}
	assertState(t, a, first.Topic, first.Seq, wire.ReadState{Topic: first.Topic, ConversationID: first.ConversationID,
		Seq: first.Seq, Read: 1, Of: 1, Readers: []int64{bob}, DeliveredSeq: first.Seq})

	// Bob hides receipts: his next read reaches nobody and counts nowhere; shown again, it does.
	yes, no := true, false
	if s, err := b.Settings(ctx, wire.SettingsRequest{HideReceipts: &yes}); err != nil || !s.HideReceipts || s.HidePresence {
		t.Fatalf("hide receipts: %+v, %v", s, err)
	}
	hidden := send(wire.SendMessageRequest{ToUser: bob, ClientMsgID: "r-2"})
	if _, err := b.MarkRead(ctx, hidden.Topic, hidden.Seq); err != nil {
		t.Fatal(err)
	}
	assertState(t, a, hidden.Topic, hidden.Seq, wire.ReadState{Topic: hidden.Topic, ConversationID: hidden.ConversationID,
		Seq: hidden.Seq, Read: 0, Of: 1, DeliveredSeq: hidden.Seq}) // hidden from the counts, yet delivered
	if _, err := b.Settings(ctx, wire.SettingsRequest{HideReceipts: &no}); err != nil {
		t.Fatal(err)
	}
	shown := send(wire.SendMessageRequest{ToUser: bob, ClientMsgID: "r-3"})
	if _, err := b.MarkRead(ctx, shown.Topic, shown.Seq); err != nil {
		t.Fatal(err)
	}
	if got := receipt(func(r wire.Receipt) bool { return r.ReadSeq > 0 }); got.ReadSeq != shown.Seq {
		t.Fatalf("first read receipt after hiding is %+v; want seq %d (the hidden read %d sent nothing)", got, shown.Seq, hidden.Seq)
	}

	// A group: read by K of N from the watermarks, the readers listed; a hider is not counted.
	msg := send(wire.SendMessageRequest{Topic: group, ClientMsgID: "g-1"})
	if _, err := b.MarkRead(ctx, group, msg.Seq); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settings(ctx, wire.SettingsRequest{HideReceipts: &yes}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MarkRead(ctx, group, msg.Seq); err != nil {
		t.Fatal(err)
	}
	want := wire.ReadState{Topic: group, ConversationID: msg.ConversationID, Seq: msg.Seq, Read: 1, Of: 3, Readers: []int64{bob}}
	assertState(t, a, group, msg.Seq, want)
	var rest wire.ReadState // the REST form, on the other node
	mustCall(t, two, ta, "POST", "/api/v1/read-state", wire.ReadStateRequest{Topic: group, Seq: msg.Seq}, &rest)
	if !sameState(rest, want) {
		t.Fatalf("POST /api/v1/read-state: %+v; want %+v", rest, want)
	}

	// Bad input: a clear code, nothing read or pushed.
	for _, bad := range []struct {
		name  string
		conn  *client.Conn
		topic string
		seq   int64
		code  int
	}{
		{"an unknown seq", a, group, msg.Seq + 100, wire.CodeNotFound},
		{"a seq that is not positive", a, group, 0, wire.CodeInvalidArgument},
		{"a message the asker did not send", b, group, msg.Seq, wire.CodeForbidden},
		{"a conversation the asker is not in", c, first.Topic, first.Seq, wire.CodeForbidden},
		{"a group that does not exist", a, "grp_999999", 1, wire.CodeForbidden},
	} {
		if _, err := bad.conn.ReadState(ctx, bad.topic, bad.seq); !isCode(err, bad.code) {
			t.Errorf("%s: %v; want %d", bad.name, err, bad.code)
		}
	}
	refused(t, two, ta, "POST", "/api/v1/read-state", map[string]any{"topic": group, "seq": "x"}, wire.CodeInvalidArgument)

	// Delivered while the sender was away (issue 31): no RECEIPT reached alice, so READ_STATE
	// tells her, on any node, once she is back.
	a.Close()
	var away wire.SendAck
	mustCall(t, two, ta, "POST", "/api/v1/messages", map[string]any{"to_user": bob, "client_msg_id": "r-away", "type": "text", "content": map[string]string{"text": "while you were out"}}, &away)
	back := one.Connect(ctx, ta, 1)
	eventually(t, 15*time.Second, "delivered_seq of the message sent while away", func() bool {
		st, err := back.ReadState(ctx, away.Topic, away.Seq)
		return err == nil && st.DeliveredSeq == away.Seq && st.Read == 0
	})

	// The metrics moved on the node of each event: bob's ack and read on node 2, alice's queries on node 1.
	for _, m := range []struct {
		srv    *Server
		name   string
		labels []string
	}{
		{two, "receipts_pushed_total", []string{"kind", "delivered"}},
		{two, "receipts_pushed_total", []string{"kind", "read"}},
		{one, "read_state_queries_total", nil},
	} {
		if m.srv.metricValue(m.name, m.labels...) <= 0 {
			t.Errorf("%s%v did not move", m.name, m.labels)
		}
	}
}

// assertState asks READ_STATE and compares the answer.
func assertState(t *testing.T, c *client.Conn, topic string, seq int64, want wire.ReadState) {
	t.Helper()
	got, err := c.ReadState(context.Background(), topic, seq)
	if err != nil || !sameState(got, want) {
		t.Fatalf("READ_STATE %s %d: %+v, %v; want %+v", topic, seq, got, err, want)
	}
}

func sameState(a, b wire.ReadState) bool {
	return a.Topic == b.Topic && a.ConversationID == b.ConversationID && a.Seq == b.Seq && a.Read == b.Read &&
		a.Of == b.Of && slices.Equal(a.Readers, b.Readers) && a.DeliveredSeq == b.DeliveredSeq
}
