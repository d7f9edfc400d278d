// Package wiremsg turns stored messages into the message object of PROTOCOL §4. It lives in
// the server adapter, not in wire, because wire is shared with the Go client and stays free of
// core types.
package wiremsg

import (
	"imd/adapters/tcp/wire"
	"imd/core/message"
)

// From returns the wire form of m. Times become Unix milliseconds; edited_at is left out for
// a message that was never edited.
func From(m message.Message) wire.Message {
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
		CreatedAt:      m.CreatedAt.UnixMilli(),
	}
	if w.Mentions == nil {
		// The contract lists mentions as an array; clients should not have to handle null.
		w.Mentions = []int64{}
	}
	if len(w.Content) == 0 {
		// Tombstones carry no content; the contract promises an object.
		w.Content = []byte("{}")
	}
	if !m.EditedAt.IsZero() {
		at := m.EditedAt.UnixMilli()
		w.EditedAt = &at
	}
	return w
}

// List converts a page of messages, keeping its order; an empty page is an empty array.
func List(ms []message.Message) []wire.Message {
	out := make([]wire.Message, len(ms))
	for i, m := range ms {
		out[i] = From(m)
	}
	return out
}
