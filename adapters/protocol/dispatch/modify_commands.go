package dispatch

import (
	"context"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/usecase/modify"
)

// recallMessage answers RECALL_MESSAGE with the recalled message; the other members learn it
// from the topic event the recall writes.
func (d *Dispatcher) recallMessage(ctx context.Context, r *request) (any, error) {
	var req wire.RecallRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic = req.Topic
	m, err := d.deps.Modify.Recall(ctx, d.target(r, req.Topic, req.Seq))
	if err != nil {
		return nil, err
	}
	r.conversationID, r.msgID = m.ConversationID, m.MsgID
	return protocol.FromMessage(m), nil
}

// editMessage answers EDIT_MESSAGE with the edited message; a stale version is 40901.
func (d *Dispatcher) editMessage(ctx context.Context, r *request) (any, error) {
	var req wire.EditRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic = req.Topic
	m, err := d.deps.Modify.Edit(ctx, modify.EditRequest{
		Target: d.target(r, req.Topic, req.Seq), Content: req.Content, Version: int(req.Version),
	})
	if err != nil {
		return nil, err
	}
	r.conversationID, r.msgID = m.ConversationID, m.MsgID
	return protocol.FromMessage(m), nil
}

// deleteRequest is DELETE_MESSAGES plus imd's addition (PROTOCOL leaves room for additions):
// for_all deletes the one message [low, low+1) for every member instead of hiding a range
// from the requester.
type deleteRequest struct {
	wire.DeleteRequest
	ForAll bool `json:"for_all,omitempty"`
}

// deleteMessages answers DELETE_MESSAGES with {}.
func (d *Dispatcher) deleteMessages(ctx context.Context, r *request) (any, error) {
	var req deleteRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic = req.Topic
	if !req.ForAll {
		err := d.deps.Modify.DeleteForSelf(ctx, modify.RangeRequest{
			Tenant: r.identity.Tenant, User: r.identity.User, Topic: req.Topic, Low: req.Low, Hi: req.Hi,
		})
		return struct{}{}, err
	}
	if req.Hi != req.Low+1 {
		return nil, apperr.New(apperr.InvalidArgument, "for_all deletes one message: hi must be low+1")
	}
	m, err := d.deps.Modify.DeleteForAll(ctx, d.target(r, req.Topic, req.Low))
	if err != nil {
		return nil, err
	}
	r.conversationID, r.msgID = m.ConversationID, m.MsgID
	return struct{}{}, nil
}

func (d *Dispatcher) target(r *request, topic string, seq int64) modify.Target {
	return modify.Target{Tenant: r.identity.Tenant, User: r.identity.User, Device: r.identity.Device, Topic: topic, Seq: seq}
}

// addModifyCommands registers RECALL_MESSAGE, EDIT_MESSAGE and DELETE_MESSAGES.
func (d *Dispatcher) addModifyCommands() {
	d.handlers[wire.CmdRecallMessage] = d.recallMessage
	d.handlers[wire.CmdEditMessage] = d.editMessage
	d.handlers[wire.CmdDeleteMessages] = d.deleteMessages
}
