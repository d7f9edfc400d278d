package protocol

import (
	"github.com/imdhq/imd/core/conversation"
	"github.com/imdhq/imd/core/message"
	"github.com/imdhq/imd/core/send"
)

// SendRequest is the send path's request for this body, from the given user's device (the
// frame listener's SEND_MESSAGE and the client HTTP API's send take the same path).
func (r SendMessageRequest) SendRequest(tenant string, from int64, device uint64) send.Request {
	return send.Request{
		Tenant:     tenant,
		From:       from,
		FromDevice: device,
		Address:    conversation.Address{Topic: r.Topic, ConversationID: r.ConversationID, ToUser: r.ToUser},
		MsgID:      r.MsgID,
		Draft: message.Draft{
			ClientMsgID: r.ClientMsgID,
			Type:        r.Type,
			Content:     r.Content,
			Mentions:    r.Mentions,
			MentionAll:  r.MentionAll,
			ReplySeq:    r.ReplySeq,
		},
	}
}

// SendAckOf is the SEND_ACK data of a stored and queued message.
func SendAckOf(res send.Result) SendAck {
	m := res.Message
	return SendAck{
		MsgID:          m.MsgID,
		Seq:            m.Seq,
		Topic:          m.Topic,
		ConversationID: m.ConversationID,
		ClientMsgID:    m.ClientMsgID,
		ServerTime:     res.ServerTime.UnixMilli(),
	}
}
