package server

import (
	"context"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/core/apperr"
	"github.com/imdhq/imd/core/modify"
)

// recallMessage answers RECALL_MESSAGE with the recalled message; the other members learn it
// from the topic event the recall writes.
func (s *Server) recallMessage(ctx context.Context, r *request) (any, error) {
	var req protocol.RecallRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic = req.Topic
	m, err := s.deps.Modify.Recall(ctx, s.target(r, req.Topic, req.Seq))
	if err != nil {
		return nil, err
	}
	r.conversationID, r.msgID = m.ConversationID, m.MsgID
	return protocol.FromMessage(m), nil
}

// editMessage answers EDIT_MESSAGE with the edited message; a stale version is 40901.
func (s *Server) editMessage(ctx context.Context, r *request) (any, error) {
	var req protocol.EditRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic = req.Topic
	m, err := s.deps.Modify.Edit(ctx, modify.EditRequest{
		Target: s.target(r, req.Topic, req.Seq), Content: req.Content, Version: int(req.Version),
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
	protocol.DeleteRequest
	ForAll bool `json:"for_all,omitempty"`
}

// deleteMessages answers DELETE_MESSAGES with {}.
func (s *Server) deleteMessages(ctx context.Context, r *request) (any, error) {
	var req deleteRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic = req.Topic
	if !req.ForAll {
		err := s.deps.Modify.DeleteForSelf(ctx, modify.RangeRequest{
			Tenant: r.identity.Tenant, User: r.identity.User, Topic: req.Topic, Low: req.Low, Hi: req.Hi,
		})
		return struct{}{}, err
	}
	if req.Hi != req.Low+1 {
		return nil, apperr.New(apperr.InvalidArgument, "for_all deletes one message: hi must be low+1")
	}
	m, err := s.deps.Modify.DeleteForAll(ctx, s.target(r, req.Topic, req.Low))
	if err != nil {
		return nil, err
	}
	r.conversationID, r.msgID = m.ConversationID, m.MsgID
	return struct{}{}, nil
}

func (s *Server) target(r *request, topic string, seq int64) modify.Target {
	return modify.Target{Tenant: r.identity.Tenant, User: r.identity.User, Device: r.identity.Device, Topic: topic, Seq: seq}
}

// addModifyCommands registers RECALL_MESSAGE, EDIT_MESSAGE and DELETE_MESSAGES.
func (s *Server) addModifyCommands() {
	s.handlers[protocol.CmdRecallMessage] = s.recallMessage
	s.handlers[protocol.CmdEditMessage] = s.editMessage
	s.handlers[protocol.CmdDeleteMessages] = s.deleteMessages
}
