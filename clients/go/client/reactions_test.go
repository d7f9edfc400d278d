package client

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// reactionHandler answers the reaction and pin commands like imd: an emoji over 64 bytes is
// 40001, pins come back as a list.
func reactionHandler(ss *session, f frame.Frame) {
	switch f.Command {
	case wire.CmdAddReaction, wire.CmdRemoveReaction:
		req := decodeBody[wire.ReactionRequest](ss.t, f)
		if len(req.Emoji) > 64 {
			ss.fail(f, f.Command, wire.CodeInvalidArgument, "emoji is longer than 64 bytes")
			return
		}
		count := 1
		if f.Command == wire.CmdRemoveReaction {
			count = 0
		}
		ss.ok(f, f.Command, wire.ReactionSummary{Topic: req.Topic, Seq: req.Seq, Reactions: []wire.ReactionCount{{Emoji: req.Emoji, Count: count, Mine: count > 0}}})
	case wire.CmdGetReactions:
		req := decodeBody[wire.GetReactionsRequest](ss.t, f)
		ss.ok(f, f.Command, wire.GetReactionsResponse{Topic: req.Topic, Seq: req.Seq, Reactions: []wire.Reaction{{Emoji: "👍", User: 7, CreatedAt: 1}}})
	case wire.CmdPinMessage, wire.CmdUnpinMessage:
		req := decodeBody[wire.PinRequest](ss.t, f)
		ss.ok(f, f.Command, wire.PinsResponse{Topic: req.Topic, Pins: []wire.Pin{{Seq: req.Seq, PinnedBy: userID, PinnedAt: 2}}})
	case wire.CmdForwardMessage:
		req := decodeBody[wire.ForwardMessageRequest](ss.t, f)
		if req.FromTopic == "grp_denied" {
			ss.fail(f, f.Command, wire.CodeForbidden, "not a member")
			return
		}
		ss.ok(f, f.Command, wire.SendAck{MsgID: 101, Seq: 2, Topic: req.Topic, ClientMsgID: req.ClientMsgID, ServerTime: 4})
	case wire.CmdGetPins:
		req := decodeBody[wire.GetPinsRequest](ss.t, f)
		ss.ok(f, f.Command, wire.PinsResponse{Topic: req.Topic, Pins: []wire.Pin{}})
	default:
		defaultHandler(ss, f)
	}
}

func TestReactionAndPinHelpers(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0", withHandler(reactionHandler))
	c := dial(t, Options{Addr: srv.addr()})
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		call func() (wire.ReactionSummary, error)
		want []wire.ReactionCount
	}{
		{"add", func() (wire.ReactionSummary, error) { return c.AddReaction(ctx, "grp_1", 3, "👍") }, []wire.ReactionCount{{Emoji: "👍", Count: 1, Mine: true}}},
		{"remove", func() (wire.ReactionSummary, error) { return c.RemoveReaction(ctx, "grp_1", 3, "👍") }, []wire.ReactionCount{{Emoji: "👍"}}},
	} {
		sum, err := tt.call()
		if err != nil || sum.Topic != "grp_1" || sum.Seq != 3 || !reflect.DeepEqual(sum.Reactions, tt.want) {
			t.Errorf("%s = %+v, %v", tt.name, sum, err)
		}
	}
	var codeErr *CodeError
	if _, err := c.AddReaction(ctx, "grp_1", 3, string(make([]byte, 65))); !errors.As(err, &codeErr) || codeErr.Code != wire.CodeInvalidArgument {
		t.Errorf("a long emoji: %v, want 40001", err)
	}
	if rs, err := c.Reactions(ctx, "grp_1", 3, 0); err != nil || len(rs) != 1 || rs[0].User != 7 {
		t.Errorf("Reactions = %+v, %v", rs, err)
	}
	for name, call := range map[string]func() ([]wire.Pin, error){
		"pin":   func() ([]wire.Pin, error) { return c.Pin(ctx, "grp_1", 3) },
		"unpin": func() ([]wire.Pin, error) { return c.Unpin(ctx, "grp_1", 3) },
	} {
		if pins, err := call(); err != nil || len(pins) != 1 || pins[0].Seq != 3 {
			t.Errorf("%s = %+v, %v", name, pins, err)
		}
	}
	if pins, err := c.Pins(ctx, "grp_1"); err != nil || len(pins) != 0 {
		t.Errorf("Pins = %+v, %v", pins, err)
	}
	ack, err := c.Forward(ctx, wire.ForwardMessageRequest{FromTopic: "grp_1", FromSeq: 3, Topic: "grp_2", ClientMsgID: "f1"})
	if err != nil || ack.Topic != "grp_2" || ack.ClientMsgID != "f1" || ack.Seq != 2 {
		t.Errorf("Forward = %+v, %v", ack, err)
	}
	if _, err := c.Forward(ctx, wire.ForwardMessageRequest{FromTopic: "grp_denied", FromSeq: 1, Topic: "grp_2", ClientMsgID: "f2"}); !errors.As(err, &codeErr) || codeErr.Code != wire.CodeForbidden {
		t.Errorf("Forward from a conversation the user cannot read: %v, want 40301", err)
	}
}
