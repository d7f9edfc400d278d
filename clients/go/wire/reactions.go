package wire

// Reactions and pins (PROTOCOL.md §3, issue 31). Their changes reach members
// as `system` messages of the topic, like a recall: content
// {"event":"reaction","seq","emoji","action":"add"|"remove","count"} and
// {"event":"pin"|"unpin","seq"}.
const (
	CmdAddReaction    uint16 = 25
	CmdRemoveReaction uint16 = 26
	CmdGetReactions   uint16 = 27
	CmdPinMessage     uint16 = 28
	CmdUnpinMessage   uint16 = 29
	CmdGetPins        uint16 = 30
)

// ReactionRequest is the body of ADD_REACTION and REMOVE_REACTION.
type ReactionRequest struct {
	Topic string `json:"topic"`
	Seq   int64  `json:"seq"`
	Emoji string `json:"emoji"`
}

// ReactionCount is one emoji of a message's reaction summary; Mine is set
// when the user it was read for is one of those who reacted with it.
type ReactionCount struct {
	Emoji string `json:"emoji"`
	Count int    `json:"count"`
	Mine  bool   `json:"mine"`
}

// ReactionSummary is the data of ADD_REACTION and REMOVE_REACTION: the
// message's reactions after the change.
type ReactionSummary struct {
	Topic     string          `json:"topic"`
	Seq       int64           `json:"seq"`
	Reactions []ReactionCount `json:"reactions"`
}

// GetReactionsRequest is the body of GET_REACTIONS: who reacted to one
// message, oldest first, at most Limit (0: 200).
type GetReactionsRequest struct {
	Topic string `json:"topic"`
	Seq   int64  `json:"seq"`
	Limit int    `json:"limit,omitempty"`
}

// Reaction is one user's emoji on a message.
type Reaction struct {
	Emoji     string `json:"emoji"`
	User      int64  `json:"user"`
	CreatedAt int64  `json:"created_at"`
}

// GetReactionsResponse is the data of GET_REACTIONS.
type GetReactionsResponse struct {
	Topic     string     `json:"topic"`
	Seq       int64      `json:"seq"`
	Reactions []Reaction `json:"reactions"`
}

// PinRequest is the body of PIN_MESSAGE and UNPIN_MESSAGE.
type PinRequest struct {
	Topic string `json:"topic"`
	Seq   int64  `json:"seq"`
}

// GetPinsRequest is the body of GET_PINS.
type GetPinsRequest struct {
	Topic string `json:"topic"`
}

// Pin is one pinned message of a conversation.
type Pin struct {
	Seq      int64 `json:"seq"`
	PinnedBy int64 `json:"pinned_by"`
	PinnedAt int64 `json:"pinned_at"`
}

// PinsResponse is the data of PIN_MESSAGE, UNPIN_MESSAGE and GET_PINS: the
// conversation's pins, newest first.
type PinsResponse struct {
	Topic string `json:"topic"`
	Pins  []Pin  `json:"pins"`
}
