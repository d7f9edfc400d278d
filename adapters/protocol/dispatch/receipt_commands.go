package dispatch

import (
	"context"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/receipts"
)

// addReceiptCommands registers READ_STATE (issue 31) where receipts are wired.
func (d *Dispatcher) addReceiptCommands() {
	if d.deps.Receipts != nil {
		d.handlers[wire.CmdReadState] = d.readState
	}
}

// readState answers READ_STATE: who of the other members read a message the asker sent.
func (d *Dispatcher) readState(ctx context.Context, r *request) (any, error) {
	var req wire.ReadStateRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic, r.conversationID = req.Topic, req.ConversationID
	st, err := d.deps.Receipts.ReadState(ctx, receipts.StateRequest{
		Tenant: r.identity.Tenant, User: r.identity.User, Seq: req.Seq,
		Address: conversation.Address{Topic: req.Topic, ConversationID: req.ConversationID, ToUser: req.ToUser},
	})
	if err != nil {
		return nil, err
	}
	return WireReadState(st), nil
}

// WireReadState is st as READ_STATE answers it (also the HTTP form).
func WireReadState(st receipts.State) wire.ReadState {
	return wire.ReadState{
		Topic: st.Topic, ConversationID: st.ConversationID, Seq: st.Seq,
		Read: st.Readers.Read, Of: st.Readers.Of, Readers: st.Readers.Users, DeliveredSeq: st.DeliveredSeq,
	}
}

// delivered hands an acknowledged MESSAGE the receipts hear of (P2P, and a token holder's
// group ones while native push waits for acks) to them on the task pool, off the connection's
// reader: the PUSH_ACK itself is answered by nothing (PROTOCOL §3). A full pool drops the
// receipt, which is live only.
func (d *Dispatcher) delivered(c *Client, m *message.Message) {
	id := c.out.Identity()
	if d.deps.Receipts == nil || !d.deps.Receipts.Hears(id.Tenant, id.User, m) {
		return
	}
	_ = d.pool.Submit(func() {
		ctx, cancel := context.WithTimeout(c.ctx, d.cfg.RequestTimeout)
		defer cancel()
		d.deps.Receipts.Delivered(ctx, id.Tenant, id.User, m)
	})
}
