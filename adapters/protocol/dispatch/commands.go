package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/usecase/history"
)

// auth verifies the token once per connection and binds the device (PROTOCOL §3). An older
// connection of the same device is kicked by the registry.
func (d *Dispatcher) auth(ctx context.Context, r *request) (data any, err error) {
	c := r.conn
	defer func() {
		if err != nil {
			c.advance(stateAuthenticating, stateConnected) // the client may try again
		}
	}()
	var req wire.AuthRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	if req.DeviceID == 0 {
		return nil, apperr.New(apperr.InvalidArgument, "device_id is required")
	}
	who, err := d.deps.Auth.Authenticate(ctx, req.Token)
	if err != nil {
		return nil, err
	}
	r.identity = session.Identity{Tenant: who.Tenant, User: who.UserID, Device: req.DeviceID}
	subscribed := c.out.Subscribe(req.Subscribe)
	c.out.HoldPushes()
	r.holdsPushes = true
	if d.sessions.Bind(c.out, r.identity) {
		d.log.InfoContext(c.ctx, "device connection replaced", "user_id", who.UserID, "device_id", req.DeviceID,
			"connection_id", c.id, "real_ip", c.realIP.String())
	}
	if !c.advance(stateAuthenticating, stateAuthenticated) {
		// The connection closed while the token was checked; OnClose may have run before Bind.
		d.sessions.Unbind(c.out)
		return nil, apperr.New(apperr.Unauthenticated, "connection closed")
	}
	return wire.AuthResponse{
		UserID:     who.UserID,
		TenantID:   who.Tenant,
		DeviceID:   req.DeviceID,
		ServerTime: d.deps.Clock.Now().UnixMilli(),
		Subscribed: subscribed,
	}, nil
}

func (d *Dispatcher) generateMsgID(context.Context, *request) (any, error) {
	id, err := d.deps.IDs.NextID()
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "id generation failed, retry", err)
	}
	return wire.GenerateMsgIDResponse{MsgID: id}, nil
}

// sendMessage runs the send path; SEND_ACK means stored and enqueued (DESIGN §4).
func (d *Dispatcher) sendMessage(ctx context.Context, r *request) (any, error) {
	var req wire.SendMessageRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic, r.conversationID, r.msgID = req.Topic, req.ConversationID, req.MsgID
	sr, err := protocol.SendRequest(req, r.identity.Tenant, r.identity.User, r.identity.Device)
	if err != nil {
		return nil, err
	}
	res, err := d.deps.Send.Send(ctx, sr)
	if err != nil {
		return nil, err
	}
	m := res.Message
	r.topic, r.conversationID, r.msgID = m.Topic, m.ConversationID, m.MsgID
	return protocol.SendAckOf(res), nil
}

// syncMessages answers SYNC_MESSAGES with message pages (cmd 12) and then the FINISH frame.
func (d *Dispatcher) syncMessages(ctx context.Context, r *request) (any, error) {
	var req wire.SyncMessagesRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic = req.Topic
	res, err := d.deps.History.Sync(ctx, history.SyncRequest{
		Tenant: r.identity.Tenant, User: r.identity.User, Topic: req.Topic, Since: req.SinceSeq, Limit: req.Limit,
	})
	if err != nil {
		return nil, err
	}
	if err := d.sendPages(r, d.withReactions(ctx, r, res.Messages)); err != nil {
		return nil, err
	}
	return wire.SyncMessagesFinish{Topic: req.Topic, LastSeq: res.LastSeq, HasMore: res.HasMore}, nil
}

// sendPages writes msgs as SYNC_MESSAGES pages, halving a page until its frame fits MaxBody.
// No page is written for no messages (PROTOCOL: zero or more pages).
func (d *Dispatcher) sendPages(r *request, msgs []wire.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	body, err := wire.OK(r.frame.RequestID, wire.SyncMessagesPage{Messages: msgs})
	if err != nil {
		return apperr.Wrap(apperr.Internal, "internal error", err)
	}
	f, err := frame.Append(nil, wire.CmdSyncMessages, r.frame.RequestID, r.frame.SequenceID, body, d.cfg.CompressMin)
	if errors.Is(err, frame.ErrTooLarge) && len(msgs) > 1 {
		half := len(msgs) / 2
		if err := d.sendPages(r, msgs[:half]); err != nil {
			return err
		}
		return d.sendPages(r, msgs[half:])
	}
	if err != nil {
		return apperr.Wrap(apperr.Internal, "message does not fit in a frame",
			fmt.Errorf("seq %d of %s: %w", msgs[0].Seq, msgs[0].Topic, err))
	}
	if err := r.conn.out.Send(f); err != nil {
		return apperr.Wrap(apperr.Internal, "connection closed", err)
	}
	return nil
}

// historyPage is the data of GET_HISTORY, newest first; it shrinks from the oldest end.
type historyPage wire.GetHistoryResponse

func (p historyPage) shrink() (any, bool) {
	if len(p.Messages) <= 1 {
		return nil, false
	}
	return historyPage{Messages: p.Messages[:len(p.Messages)/2]}, true
}

func (d *Dispatcher) getHistory(ctx context.Context, r *request) (any, error) {
	var req wire.GetHistoryRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic = req.Topic
	msgs, err := d.deps.History.History(ctx, history.HistoryRequest{
		Tenant: r.identity.Tenant, User: r.identity.User, Topic: req.Topic, Before: req.BeforeSeq, Limit: req.Limit,
	})
	if err != nil {
		return nil, err
	}
	return historyPage{Messages: d.withReactions(ctx, r, msgs)}, nil
}
