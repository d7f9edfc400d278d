package client

import (
	"context"

	"github.com/imdhq/imd/clients/go/wire"
)

// AddReaction puts the user's emoji on message seq of topic, in any month
// (ADD_REACTION), and returns the message's reaction summary. Adding it twice
// changes nothing; the members learn a change from a `system` message of the
// topic.
func (c *Conn) AddReaction(ctx context.Context, topic string, seq int64, emoji string) (wire.ReactionSummary, error) {
	return c.reaction(ctx, wire.CmdAddReaction, topic, seq, emoji)
}

// RemoveReaction takes the user's emoji off the message (REMOVE_REACTION).
func (c *Conn) RemoveReaction(ctx context.Context, topic string, seq int64, emoji string) (wire.ReactionSummary, error) {
	return c.reaction(ctx, wire.CmdRemoveReaction, topic, seq, emoji)
}

func (c *Conn) reaction(ctx context.Context, cmd uint16, topic string, seq int64, emoji string) (wire.ReactionSummary, error) {
	var sum wire.ReactionSummary
	err := c.call(ctx, cmd, wire.ReactionRequest{Topic: topic, Seq: seq, Emoji: emoji}, &sum)
	return sum, err
}

// Reactions lists who reacted to the message with what, oldest first, at
// most limit (0: the server's default), GET_REACTIONS.
func (c *Conn) Reactions(ctx context.Context, topic string, seq int64, limit int) ([]wire.Reaction, error) {
	var resp wire.GetReactionsResponse
	err := c.call(ctx, wire.CmdGetReactions, wire.GetReactionsRequest{Topic: topic, Seq: seq, Limit: limit}, &resp)
	return resp.Reactions, err
}

// Pin pins the message in its conversation (PIN_MESSAGE: a group's owner and
// admins, both members of a pair) and returns the pins, newest first.
func (c *Conn) Pin(ctx context.Context, topic string, seq int64) ([]wire.Pin, error) {
	return c.pins(ctx, wire.CmdPinMessage, wire.PinRequest{Topic: topic, Seq: seq})
}

// Unpin unpins the message (UNPIN_MESSAGE) and returns the pins left.
func (c *Conn) Unpin(ctx context.Context, topic string, seq int64) ([]wire.Pin, error) {
	return c.pins(ctx, wire.CmdUnpinMessage, wire.PinRequest{Topic: topic, Seq: seq})
}

// Pins lists the conversation's pinned messages, newest first (GET_PINS).
func (c *Conn) Pins(ctx context.Context, topic string) ([]wire.Pin, error) {
	return c.pins(ctx, wire.CmdGetPins, wire.GetPinsRequest{Topic: topic})
}

func (c *Conn) pins(ctx context.Context, cmd uint16, req any) ([]wire.Pin, error) {
	var resp wire.PinsResponse
	err := c.call(ctx, cmd, req, &resp)
	return resp.Pins, err
}

// Forward sends a copy of a message into another conversation
// (FORWARD_MESSAGE) and returns the copy's SEND_ACK; its content carries the
// origin under "forward" (wire.ForwardOrigin). Retry with the same
// ClientMsgID.
func (c *Conn) Forward(ctx context.Context, req wire.ForwardMessageRequest) (wire.SendAck, error) {
	var ack wire.SendAck
	err := c.call(ctx, wire.CmdForwardMessage, req, &ack)
	return ack, err
}
