package protocol

import (
	"encoding/json"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/message"
)

// FromMessage returns the wire form of a stored message. Times become Unix milliseconds;
// edited_at is left out for a message that was never edited.
func FromMessage(m message.Message) wire.Message {
	w := wire.Message{
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
func FromMessages(ms []message.Message) []wire.Message {
	out := make([]wire.Message, len(ms))
	for i, m := range ms {
		out[i] = FromMessage(m)
	}
	return out
}
