package wire

// CmdForwardMessage is FORWARD_MESSAGE (PROTOCOL.md §3, issue 31): a copy of
// a message sent into another conversation, answered with a SendAck on its
// own command.
const CmdForwardMessage uint16 = 31

// ForwardMessageRequest is the body of FORWARD_MESSAGE: message FromSeq of
// FromTopic, sent into the conversation addressed by exactly one of Topic,
// ConversationID and ToUser. ClientMsgID is the idempotency key, as in
// SEND_MESSAGE.
type ForwardMessageRequest struct {
	FromTopic      string `json:"from_topic"`
	FromSeq        int64  `json:"from_seq"`
	Topic          string `json:"topic,omitempty"`
	ConversationID int64  `json:"conversation_id,omitempty"`
	ToUser         int64  `json:"to_user,omitempty"`
	ClientMsgID    string `json:"client_msg_id"`
	MsgID          int64  `json:"msg_id,omitempty"`
}

// ForwardOrigin is the reference a forwarded copy carries in its content,
// under "forward": the message it is a copy of.
type ForwardOrigin struct {
	Topic string `json:"topic"`
	Seq   int64  `json:"seq"`
	MsgID int64  `json:"msg_id"`
	From  int64  `json:"from"`
}
