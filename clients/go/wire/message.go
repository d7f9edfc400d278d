package wire

import "encoding/json"

// Message statuses (PROTOCOL.md §4); the server's test keeps them equal to its domain's.
const (
	StatusNormal   = "normal"
	StatusRecalled = "recalled"
	StatusDeleted  = "deleted"
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
	// Reactions is the message's reaction summary in history and sync answers
	// (issue 31); absent when it has none, and in pushes.
	Reactions []ReactionCount `json:"reactions,omitempty"`
}
