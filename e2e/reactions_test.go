package e2e

// Reactions and pins (issue 31 parts 4, 5 and 7) through two real nodes, MariaDB and Redis.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

func react(ctx context.Context, c *client.Conn, cmd uint16, topic string, seq int64, emoji string) (wire.ReactionSummary, error) {
	var sum wire.ReactionSummary
	err := change(ctx, c, cmd, wire.ReactionRequest{Topic: topic, Seq: seq, Emoji: emoji}, &sum)
	return sum, err
}

func codeOf(err error) int {
	var ce *client.CodeError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return -1
}

// TestReactionsAndPinsCrossNodesOnSealedMonths: the owner on node 1 and a member on node 2. The
// member reacts to a message of last month, sealed since: the owner's device on node 1 gets the
// one topic event, a second identical add changes and announces nothing, history and sync carry
// the summary with each caller's own marked, bad input and the per-user limit are refused with
// their codes and change nothing, and only the owner may pin, which reaches node 2.
func TestReactionsAndPinsCrossNodesOnSealedMonths(t *testing.T) {
	nodes := startNodes(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const owner, member int64 = 3101, 3102
	ownerToken, memberToken := nodes[0].User(owner), nodes[0].User(member)
	topic := nodes[0].Group(31, owner, member)
	a := nodes[0].Connect(ctx, ownerToken, 1)
	b := nodes[1].Connect(ctx, memberToken, 1)

	old := mustSend(t, ctx, a, textMessage(topic, "old", "from last month")).Seq
	nodes[0].Advance(Month(1))
	seal(t, nodes[0].TenantDB(), Month(0))
	fresh := mustSend(t, ctx, a, textMessage(topic, "new", "this month")).Seq
	collectPushes(t, b, time.Minute, func(p pushLog) bool { return len(p.seqs) >= 2 })

	before := nodes[1].metricValue("message_reaction_total", "action", "add", "status", "ok")
	for i := range 2 {
		sum, err := react(ctx, b, wire.CmdAddReaction, topic, old, "👍")
		if err != nil {
			t.Fatalf("add %d on the sealed month's seq %d: %v", i+1, old, err)
		}
		if want := []wire.ReactionCount{{Emoji: "👍", Count: 1, Mine: true}}; !reflect.DeepEqual(sum.Reactions, want) {
			t.Fatalf("add %d: summary %+v, want %+v", i+1, sum.Reactions, want)
		}
	}
	if got := nodes[1].metricValue("message_reaction_total", "action", "add", "status", "ok") - before; got != 2 {
		t.Errorf("message_reaction_total{add,ok} rose by %v, want 2", got)
	}
	m, e := awaitEvent(t, a, 30*time.Second)
	if want := (topicEvent{Event: "reaction", Seq: old, Emoji: "👍", Action: "add", Count: 1}); m.From != member || e != want {
		t.Fatalf("node 1 got %+v from %d, want %+v from %d", e, m.From, want, member)
	}
	assertNoMessage(t, a, time.Second) // the second add announced nothing
	if _, err := react(ctx, a, wire.CmdAddReaction, topic, old, "👍"); err != nil {
		t.Fatal(err)
	}
	if _, e := awaitEvent(t, b, 30*time.Second); e.Count != 2 || e.Seq != old {
		t.Fatalf("node 2 got %+v, want the owner's add with count 2", e)
	}

	// Bad input, and the 21st emoji of one user on one message: refused, nothing changes.
	for i := range 20 {
		if _, err := react(ctx, b, wire.CmdAddReaction, topic, fresh, fmt.Sprintf("e%d", i)); err != nil {
			t.Fatalf("emoji %d of 20: %v", i+1, err)
		}
	}
	for _, tt := range []struct {
		name  string
		seq   int64
		emoji string
		code  int
	}{
		{"emoji too long", old, strings.Repeat("x", 65), wire.CodeInvalidArgument},
		{"unknown seq", fresh + 1000, "👍", wire.CodeNotFound},
		{"a 21st emoji of one user", fresh, "e20", wire.CodeForbidden},
	} {
		if _, err := react(ctx, b, wire.CmdAddReaction, topic, tt.seq, tt.emoji); codeOf(err) != tt.code {
			t.Errorf("%s: %v, want code %d", tt.name, err, tt.code)
		}
	}
	var who wire.GetReactionsResponse
	if err := change(ctx, b, wire.CmdGetReactions, wire.GetReactionsRequest{Topic: topic, Seq: fresh}, &who); err != nil {
		t.Fatal(err)
	}
	if len(who.Reactions) != 20 {
		t.Errorf("seq %d holds %d reactions, want the 20 admitted", fresh, len(who.Reactions))
	}

	// History (owner, node 1) and sync (member, node 2) carry the summary, each one's own marked.
	var page wire.GetHistoryResponse
	if err := change(ctx, a, wire.CmdGetHistory, wire.GetHistoryRequest{Topic: topic, Limit: 200}, &page); err != nil {
		t.Fatal(err)
	}
	if got := summaryOf(page.Messages, old); !reflect.DeepEqual(got, []wire.ReactionCount{{Emoji: "👍", Count: 2, Mine: true}}) {
		t.Errorf("history: seq %d summary %+v", old, got)
	}
	if got := summaryOf(page.Messages, fresh); len(got) != 20 || got[0].Mine {
		t.Errorf("history: seq %d summary %+v, want 20 emojis, none the owner's", fresh, got)
	}
	synced, _, err := b.SyncMessages(ctx, topic, 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	if got := summaryOf(synced, fresh); len(got) != 20 || !got[0].Mine {
		t.Errorf("sync: seq %d summary %+v, want 20 emojis, the member's", fresh, got)
	}
	rest := get(t, nodes[1], memberToken, "/api/v1/topics/"+topic+"/messages/"+fmt.Sprint(old))
	if want := `"reactions":[{"count":2,"emoji":"👍","mine":true}]`; !strings.Contains(rest, want) {
		t.Errorf("GET one message: %s, want %s", rest, want)
	}

	// Pins: a member may not, the owner may; the event reaches node 2.
	var pins wire.PinsResponse
	if err := change(ctx, b, wire.CmdPinMessage, wire.PinRequest{Topic: topic, Seq: old}, &pins); codeOf(err) != wire.CodeForbidden {
		t.Fatalf("a member pins: %v, want 40301", err)
	}
	drain(b)
	beforePins := nodes[0].metricValue("message_pin_total", "action", "pin", "status", "ok")
	if err := change(ctx, a, wire.CmdPinMessage, wire.PinRequest{Topic: topic, Seq: old}, &pins); err != nil {
		t.Fatal(err)
	}
	if len(pins.Pins) != 1 || pins.Pins[0].Seq != old || pins.Pins[0].PinnedBy != owner {
		t.Fatalf("pins %+v", pins)
	}
	if got := nodes[0].metricValue("message_pin_total", "action", "pin", "status", "ok") - beforePins; got != 1 {
		t.Errorf("message_pin_total{pin,ok} rose by %v, want 1", got)
	}
	if m, e := awaitEvent(t, b, 30*time.Second); m.From != owner || e.Event != "pin" || e.Seq != old {
		t.Fatalf("node 2 got %+v from %d, want the owner's pin of seq %d", e, m.From, old)
	}
	if got := get(t, nodes[1], memberToken, "/api/v1/topics/"+topic+"/pins"); !strings.Contains(got, fmt.Sprintf(`"seq":%d`, old)) {
		t.Errorf("GET pins: %s", got)
	}
}

// summaryOf is the reaction summary of seq in a page.
func summaryOf(ms []wire.Message, seq int64) []wire.ReactionCount {
	for _, m := range ms {
		if m.Seq == seq {
			return m.Reactions
		}
	}
	return nil
}

// drain drops the pushes c has received so far.
func drain(c *client.Conn) {
	for {
		select {
		case <-c.Pushes():
		default:
			return
		}
	}
}

// TestForwardCarriesTheOriginAndItsMedia: a member forwards an image of one group into another
// over TCP; the other group's member gets the copy pushed with the origin (topic, seq, msg_id,
// sender) under content.forward and may then download its media, which it could not before. A
// user outside the origin's group is refused 40301 on TCP and on the REST form, and nothing is
// stored.
func TestForwardCarriesTheOriginAndItsMedia(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const sender, forwarder, reader int64 = 3201, 3202, 3203
	senderToken, forwarderToken, readerToken := srv.User(sender), srv.User(forwarder), srv.User(reader)
	origin := srv.Group(3201, sender, forwarder)
	dest := srv.Group(3202, forwarder, reader)
	var grant struct{ Key string }
	mustCall(t, srv, senderToken, "POST", "/api/v1/uploads", map[string]any{"content_type": "image/png", "size": 10}, &grant)
	download := map[string]string{"key": grant.Key}
	img := mustSend(t, ctx, srv.Connect(ctx, senderToken, 1), imageMessage(origin, "img", grant.Key))
	refused(t, srv, readerToken, "POST", "/api/v1/downloads", download, 40301)

	f := srv.Connect(ctx, forwarderToken, 1)
	r := srv.Connect(ctx, readerToken, 1)
	var ack wire.SendAck
	req := wire.ForwardMessageRequest{FromTopic: origin, FromSeq: img.Seq, Topic: dest, ClientMsgID: "fw-1"}
	for range 2 { // a retry is the same copy
		if err := change(ctx, f, wire.CmdForwardMessage, req, &ack); err != nil {
			t.Fatal(err)
		}
	}
	got := awaitMessage(t, r, dest, func(wire.Message) bool { return true })
	var content struct {
		Key     string             `json:"key"`
		Forward wire.ForwardOrigin `json:"forward"`
	}
	if err := json.Unmarshal(got.Content, &content); err != nil {
		t.Fatal(err)
	}
	want := wire.ForwardOrigin{Topic: origin, Seq: img.Seq, MsgID: img.MsgID, From: sender}
	if got.Seq != ack.Seq || got.Type != wire.TypeImage || got.From != forwarder || content.Key != grant.Key || content.Forward != want {
		t.Fatalf("copy %+v content %s, want an image with forward %+v", got, got.Content, want)
	}
	assertNoMessage(t, r, time.Second)
	mustCall(t, srv, readerToken, "POST", "/api/v1/downloads", download, nil)

	// The reader is not in the origin's group.
	back := wire.ForwardMessageRequest{FromTopic: origin, FromSeq: img.Seq, Topic: dest, ClientMsgID: "fw-2"}
	if err := change(ctx, r, wire.CmdForwardMessage, back, nil); codeOf(err) != wire.CodeForbidden {
		t.Fatalf("forward from a group the user is not in: %v, want 40301", err)
	}
	refused(t, srv, readerToken, "POST", "/api/v1/messages/forward", back, 40301)
	// Nor can the reader claim the origin by writing the reference into a SEND (issue 31): only
	// the forward command sets content.forward.
	forged := wire.SendMessageRequest{Topic: dest, ClientMsgID: "forged-1", Type: wire.TypeText,
		Content: json.RawMessage(`{"text":"look","forward":{"topic":"` + origin + `","seq":1,"msg_id":1,"from":3201}}`)}
	if _, err := r.Send(ctx, forged); codeOf(err) != wire.CodeInvalidArgument {
		t.Fatalf("SEND with a client content.forward: %v, want 40001", err)
	}
	if msgs, _, err := r.SyncMessages(ctx, dest, 0, 50); err != nil || len(msgs) != 1 {
		t.Fatalf("the destination holds %d messages (%v), want the one copy", len(msgs), err)
	}
}
