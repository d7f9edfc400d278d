package protocol

import (
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/forward"
	"github.com/imdhq/imd/core/usecase/send"
)

// errAddress refuses a SEND_MESSAGE that names no conversation, or more than one way.
var errAddress = apperr.New(apperr.InvalidArgument, "exactly one of topic, conversation_id and to_user is required")

// SendRequest is the send path's request for body r, from the given user's device: every
// transport's SEND takes the same path. It fails with 40001 unless exactly one of topic,
// conversation_id and to_user addresses the message (PROTOCOL §4).
func SendRequest(r wire.SendMessageRequest, tenant string, from int64, device uint64) (send.Request, error) {
	to, err := address(r.Topic, r.ConversationID, r.ToUser)
	if err != nil {
		return send.Request{}, err
	}
	return send.Request{
		Tenant:     tenant,
		From:       from,
		FromDevice: device,
		Address:    to,
		MsgID:      r.MsgID,
		Draft: message.Draft{
			ClientMsgID: r.ClientMsgID,
			Type:        r.Type,
			Content:     r.Content,
			Mentions:    r.Mentions,
			MentionAll:  r.MentionAll,
			ReplySeq:    r.ReplySeq,
		},
	}, nil
}

// SendAckOf is the SEND_ACK data of a stored and queued message.
func SendAckOf(res send.Result) wire.SendAck {
	m := res.Message
	return wire.SendAck{
		MsgID:          m.MsgID,
		Seq:            m.Seq,
		Topic:          m.Topic,
		ConversationID: m.ConversationID,
		ClientMsgID:    m.ClientMsgID,
		ServerTime:     res.ServerTime.UnixMilli(),
	}
}

// address is the conversation exactly one of topic, conversation_id and to_user names.
func address(topic string, conversationID, toUser int64) (conversation.Address, error) {
	addressed := 0
	for _, set := range []bool{topic != "", conversationID != 0, toUser != 0} {
		if set {
			addressed++
		}
	}
	if addressed != 1 {
		return conversation.Address{}, errAddress
	}
	return conversation.Address{Topic: topic, ConversationID: conversationID, ToUser: toUser}, nil
}

// ForwardRequest is the forward use case's request for body r (FORWARD_MESSAGE), addressed
// like a send.
func ForwardRequest(r wire.ForwardMessageRequest, tenant string, user int64, device uint64) (forward.Request, error) {
	to, err := address(r.Topic, r.ConversationID, r.ToUser)
	if err != nil {
		return forward.Request{}, err
	}
	return forward.Request{
		Tenant: tenant, User: user, Device: device, Topic: r.FromTopic, Seq: r.FromSeq, To: to,
		ClientMsgID: r.ClientMsgID, MsgID: r.MsgID,
	}, nil
}
