package dispatch

import (
	"context"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/reactions"
)

// react answers ADD_REACTION and REMOVE_REACTION with the message's summary; the other
// members learn the change from the topic event it writes (issue 31).
func (d *Dispatcher) react(remove bool) handler {
	return func(ctx context.Context, r *request) (any, error) {
		var req wire.ReactionRequest
		if err := d.decodeReactions(r, &req); err != nil {
			return nil, err
		}
		r.topic = req.Topic
		sum, err := d.deps.Reactions.React(ctx, d.reactionTarget(r, req.Topic, req.Seq), req.Emoji, remove)
		if err != nil {
			return nil, err
		}
		return protocol.ReactionSummaryOf(sum), nil
	}
}

func (d *Dispatcher) getReactions(ctx context.Context, r *request) (any, error) {
	var req wire.GetReactionsRequest
	if err := d.decodeReactions(r, &req); err != nil {
		return nil, err
	}
	r.topic = req.Topic
	rs, err := d.deps.Reactions.Reactors(ctx, d.reactionTarget(r, req.Topic, req.Seq), req.Limit)
	if err != nil {
		return nil, err
	}
	return protocol.Reactors(req.Topic, req.Seq, rs), nil
}

// pin answers PIN_MESSAGE and UNPIN_MESSAGE with the conversation's pins.
func (d *Dispatcher) pin(unpin bool) handler {
	return func(ctx context.Context, r *request) (any, error) {
		var req wire.PinRequest
		if err := d.decodeReactions(r, &req); err != nil {
			return nil, err
		}
		r.topic = req.Topic
		pins, err := d.deps.Reactions.Pin(ctx, d.reactionTarget(r, req.Topic, req.Seq), unpin)
		if err != nil {
			return nil, err
		}
		return protocol.Pins(req.Topic, pins), nil
	}
}

func (d *Dispatcher) getPins(ctx context.Context, r *request) (any, error) {
	var req wire.GetPinsRequest
	if err := d.decodeReactions(r, &req); err != nil {
		return nil, err
	}
	r.topic = req.Topic
	pins, err := d.deps.Reactions.Pins(ctx, r.identity.Tenant, r.identity.User, req.Topic)
	if err != nil {
		return nil, err
	}
	return protocol.Pins(req.Topic, pins), nil
}

// decodeReactions decodes the body of a reaction or pin command, which a server built without
// the reaction store answers 50301.
func (d *Dispatcher) decodeReactions(r *request, body any) error {
	if d.deps.Reactions == nil {
		return apperr.New(apperr.Busy, "reactions and pins are not available")
	}
	return decodeBody(r.frame.Body, body)
}

func (d *Dispatcher) reactionTarget(r *request, topic string, seq int64) reactions.Target {
	return reactions.Target{Tenant: r.identity.Tenant, User: r.identity.User, Device: r.identity.Device, Topic: topic, Seq: seq}
}

// withReactions converts a page of messages with each one's reaction summary as the caller
// sees it, in one read for the page (issue 31).
func (d *Dispatcher) withReactions(ctx context.Context, r *request, msgs []message.Message) []wire.Message {
	out := protocol.FromMessages(msgs)
	if d.deps.Reactions == nil {
		return out
	}
	return protocol.WithReactions(out, d.deps.Reactions.Summaries(ctx, r.identity.Tenant, r.identity.User, msgs))
}

// forwardMessage answers FORWARD_MESSAGE with the copy's SEND_ACK data, on its own command.
func (d *Dispatcher) forwardMessage(ctx context.Context, r *request) (any, error) {
	if d.deps.Forward == nil {
		return nil, apperr.New(apperr.Busy, "forwarding is not available")
	}
	var req wire.ForwardMessageRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic, r.conversationID, r.msgID = req.Topic, req.ConversationID, req.MsgID
	fr, err := protocol.ForwardRequest(req, r.identity.Tenant, r.identity.User, r.identity.Device)
	if err != nil {
		return nil, err
	}
	res, err := d.deps.Forward.Forward(ctx, fr)
	if err != nil {
		return nil, err
	}
	m := res.Message
	r.topic, r.conversationID, r.msgID = m.Topic, m.ConversationID, m.MsgID
	return protocol.SendAckOf(res), nil
}

// addReactionCommands registers the reaction and pin commands (25-30) and FORWARD_MESSAGE (31).
func (d *Dispatcher) addReactionCommands() {
	d.handlers[wire.CmdAddReaction] = d.react(false)
	d.handlers[wire.CmdRemoveReaction] = d.react(true)
	d.handlers[wire.CmdGetReactions] = d.getReactions
	d.handlers[wire.CmdPinMessage] = d.pin(false)
	d.handlers[wire.CmdUnpinMessage] = d.pin(true)
	d.handlers[wire.CmdGetPins] = d.getPins
	d.handlers[wire.CmdForwardMessage] = d.forwardMessage
}
