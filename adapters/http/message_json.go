package http

import (
	"encoding/json"
	"time"

	"imd/core/message"
)

// messageObject is the message object of PROTOCOL §4, as the admin API returns it. It only
// depends on core/message, so the TCP transport can share it.
type messageObject struct {
	Topic          string          `json:"topic"`
	ConversationID int64           `json:"conversation_id"`
	Seq            int64           `json:"seq"`
	MsgID          int64           `json:"msg_id"`
	From           int64           `json:"from"`
	ClientMsgID    string          `json:"client_msg_id"`
	Type           string          `json:"type"`
	Content        json.RawMessage `json:"content"`
	Mentions       []int64         `json:"mentions"`
	MentionAll     bool            `json:"mention_all"`
	ReplySeq       int64           `json:"reply_seq"`
	Status         message.Status  `json:"status"`
	Version        int             `json:"version"`
	CreatedAt      int64           `json:"created_at"`         // Unix ms
	EditedAt       int64           `json:"edited_at,omitzero"` // Unix ms; absent when never edited
}

func newMessageObject(m message.Message) messageObject {
	mentions := m.Mentions
	if mentions == nil {
		mentions = []int64{} // clients index it; null would need a special case
	}
	content := m.Content
	if len(content) == 0 {
		content = json.RawMessage("{}") // a tombstone has no payload; keep the field an object
	}
	return messageObject{
		Topic:          m.Topic,
		ConversationID: m.ConversationID,
		Seq:            m.Seq,
		MsgID:          m.MsgID,
		From:           m.From,
		ClientMsgID:    m.ClientMsgID,
		Type:           m.Type,
		Content:        content,
		Mentions:       mentions,
		MentionAll:     m.MentionAll,
		ReplySeq:       m.ReplySeq,
		Status:         m.Status,
		Version:        m.Version,
		CreatedAt:      unixMilli(m.CreatedAt),
		EditedAt:       unixMilli(m.EditedAt),
	}
}

func newMessageObjects(ms []message.Message) []messageObject {
	out := make([]messageObject, len(ms))
	for i, m := range ms {
		out[i] = newMessageObject(m)
	}
	return out
}

// unixMilli is t in Unix ms, 0 for the zero time (whose UnixMilli is a large negative number).
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
