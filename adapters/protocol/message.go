package protocol

import (
	"encoding/json"

	"github.com/imdhq/imd/core/domain/message"
)

// Message statuses.
const (
	StatusNormal   = string(message.StatusNormal)
	StatusRecalled = string(message.StatusRecalled)
	StatusDeleted  = string(message.StatusDeleted)
)

// Message is the message object of PROTOCOL.md §4: the data of a MESSAGE push,
// of RECALL_MESSAGE and EDIT_MESSAGE, and the items of message lists; the HTTP
// APIs return the same object.
type Message struct {
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
	Status         string          `json:"status"`
	Version        int64           `json:"version"`
	CreatedAt      int64           `json:"created_at"`
	EditedAt       *int64          `json:"edited_at,omitempty"`
}

// FromMessage returns the wire form of a stored message. Times become Unix milliseconds;
// edited_at is left out for a message that was never edited.
func FromMessage(m message.Message) Message {
	w := Message{
		Topic:          m.Topic,
		ConversationID: m.ConversationID,
		Seq:            m.Seq,
		MsgID:          m.MsgID,
		From:           m.From,
		ClientMsgID:    m.ClientMsgID,
		Type:           m.Type,
		Content:        m.Content,
		Mentions:       m.Mentions,
		MentionAll:     m.MentionAll,
		ReplySeq:       m.ReplySeq,
		Status:         string(m.Status),
		Version:        int64(m.Version),
	}
	if w.Mentions == nil {
		// The contract lists mentions as an array; clients should not have to handle null.
		w.Mentions = []int64{}
	}
	if len(w.Content) == 0 {
		// Tombstones carry no content; the contract promises an object.
		w.Content = json.RawMessage("{}")
	}
	// A zero time would be a large negative number of milliseconds; 0 says "unknown".
	if !m.CreatedAt.IsZero() {
		w.CreatedAt = m.CreatedAt.UnixMilli()
	}
	if !m.EditedAt.IsZero() {
		at := m.EditedAt.UnixMilli()
		w.EditedAt = &at
	}
	return w
}

// FromMessages converts a page of messages, keeping its order; an empty page is an empty
// array, never null.
func FromMessages(ms []message.Message) []Message {
	out := make([]Message, len(ms))
	for i, m := range ms {
		out[i] = FromMessage(m)
	}
	return out
}
