package wire

import "encoding/json"

// Times are Unix milliseconds. IDs are JSON numbers.

// AuthRequest is the body of AUTH.
type AuthRequest struct {
	Token    string `json:"token"`
	DeviceID uint64 `json:"device_id"`
	Platform string `json:"platform,omitempty"`
	// Subscribe names the live pushes the client reads (SubscribePresence, SubscribeTyping,
	// SubscribeReceipt);
	// without it the connection gets none of them (docs/PROTOCOL.md, AUTH).
	Subscribe []string `json:"subscribe,omitempty"`
}

// The live pushes an AUTH may subscribe to.
const (
	SubscribePresence = "presence" // PRESENCE (20)
	SubscribeTyping   = "typing"   // TYPING_NOTICE (22)
	SubscribeReceipt  = "receipt"  // RECEIPT (24)
)

// AuthResponse is the data of a successful AUTH.
type AuthResponse struct {
	UserID     int64  `json:"user_id"`
	TenantID   string `json:"tenant_id"`
	DeviceID   uint64 `json:"device_id"`
	ServerTime int64  `json:"server_time"`
	// Subscribed is what of Subscribe this server sends, in the order asked; an older server
	// leaves it out.
	Subscribed []string `json:"subscribed,omitempty"`
}

// HeartbeatResponse is the data of HEARTBEAT.
type HeartbeatResponse struct {
	ServerTime int64 `json:"server_time"`
}

// GenerateMsgIDResponse is the data of GENERATE_MSG_ID.
type GenerateMsgIDResponse struct {
	MsgID int64 `json:"msg_id"`
}

// Message types (PROTOCOL.md §4).
const (
	TypeText     = "text"
	TypeImage    = "image"
	TypeVoice    = "voice"
	TypeVideo    = "video"
	TypeSticker  = "sticker"
	TypeGIF      = "gif"
	TypeFile     = "file"
	TypeLocation = "location"
	TypeSystem   = "system"
)

// ImageContent is the content of an image message (PROTOCOL.md §4 "Image thumbnails") and the
// answer of POST /api/v1/uploads/complete, which names the thumbnail and the image's upright
// dimensions: Key is the upload's; ThumbKey, Width and Height are empty for an image that has
// no thumbnail.
type ImageContent struct {
	Key      string `json:"key"`
	ThumbKey string `json:"thumb_key,omitempty"`
	Width    int    `json:"width,omitempty"`
	Height   int    `json:"height,omitempty"`
}

// SendMessageRequest is the body of SEND_MESSAGE. Exactly one of Topic,
// ConversationID and ToUser addresses the conversation.
type SendMessageRequest struct {
	Topic          string          `json:"topic,omitempty"`
	ConversationID int64           `json:"conversation_id,omitempty"`
	ToUser         int64           `json:"to_user,omitempty"`
	ClientMsgID    string          `json:"client_msg_id"`
	MsgID          int64           `json:"msg_id,omitempty"` // pre-generated with GENERATE_MSG_ID
	Type           string          `json:"type"`
	Content        json.RawMessage `json:"content"`
	Mentions       []int64         `json:"mentions,omitempty"`
	MentionAll     bool            `json:"mention_all,omitempty"`
	ReplySeq       int64           `json:"reply_seq,omitempty"`
}

// SendAck is the data of SEND_ACK.
type SendAck struct {
	MsgID          int64  `json:"msg_id"`
	Seq            int64  `json:"seq"`
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	ClientMsgID    string `json:"client_msg_id"`
	ServerTime     int64  `json:"server_time"`
}

// ReadRequest is the body of READ_MESSAGE in one of its forms: {topic, seq},
// {conversation_id, msg_id} or {conversation_id, last_msg_id, peer_id?}.
type ReadRequest struct {
	Topic          string `json:"topic,omitempty"`
	Seq            int64  `json:"seq,omitempty"`
	ConversationID int64  `json:"conversation_id,omitempty"`
	MsgID          int64  `json:"msg_id,omitempty"`
	LastMsgID      int64  `json:"last_msg_id,omitempty"`
	PeerID         int64  `json:"peer_id,omitempty"`
}

// ReadResponse is the stored read watermark: the data of READ_MESSAGE, both as
// a response and as the push to the user's other devices.
type ReadResponse struct {
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	MsgID          int64  `json:"msg_id"`
}

// RecallRequest is the body of RECALL_MESSAGE.
type RecallRequest struct {
	Topic string `json:"topic"`
	Seq   int64  `json:"seq"`
}

// EditRequest is the body of EDIT_MESSAGE; Version is the version the client
// last saw (a stale one is 40901).
type EditRequest struct {
	Topic   string          `json:"topic"`
	Seq     int64           `json:"seq"`
	Content json.RawMessage `json:"content"`
	Version int64           `json:"version"`
}

// DeleteRequest is the body of DELETE_MESSAGES: seqs [Low, Hi) of Topic,
// hidden for the requesting user only.
type DeleteRequest struct {
	Topic string `json:"topic"`
	Low   int64  `json:"low"`
	Hi    int64  `json:"hi"`
}

// SyncInboxRequest is the body of SYNC_INBOX: the cursors of the previous
// SYNC_INBOX_FINISH (zero on first sync).
type SyncInboxRequest struct {
	MailboxSeq  int64 `json:"mailbox_seq"`
	DialogScore int64 `json:"dialog_score"`
	Limit       int   `json:"limit,omitempty"`
}

// SyncInboxPage is the data of one SYNC_INBOX page.
type SyncInboxPage struct {
	Dialogs []Dialog `json:"dialogs"`
	Events  []Event  `json:"events"`
}

// Dialog is one conversation of the inbox that changed since the request's
// dialog_score. PROTOCOL.md leaves its shape open; this is the shape imd uses.
type Dialog struct {
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	Score          int64  `json:"score"` // the dialog ZSET score: last message time
	LastSeq        int64  `json:"last_seq"`
	ReadSeq        int64  `json:"read_seq"`
	Unread         int64  `json:"unread"`
	// Preview is a short preview of the last message, as the server stores it.
	Preview json.RawMessage `json:"preview,omitempty"`
	Muted   bool            `json:"muted,omitempty"`
	Pinned  bool            `json:"pinned,omitempty"`
}

// SyncInboxFinish is the data of SYNC_INBOX_FINISH: the cursors for the next
// SYNC_INBOX.
type SyncInboxFinish struct {
	MailboxSeq  int64 `json:"mailbox_seq"`
	DialogScore int64 `json:"dialog_score"`
	HasMore     bool  `json:"has_more"`
}

// MaxSyncLimit is the largest limit SYNC_MESSAGES accepts.
const MaxSyncLimit = 200

// SyncMessagesRequest is the body of SYNC_MESSAGES: messages after SinceSeq.
type SyncMessagesRequest struct {
	Topic    string `json:"topic"`
	SinceSeq int64  `json:"since_seq"`
	Limit    int    `json:"limit,omitempty"`
}

// SyncMessagesPage is the data of one SYNC_MESSAGES page, ascending seq.
type SyncMessagesPage struct {
	Messages []Message `json:"messages"`
}

// SyncMessagesFinish is the data of SYNC_MESSAGES_FINISH.
type SyncMessagesFinish struct {
	Topic   string `json:"topic"`
	LastSeq int64  `json:"last_seq"`
	HasMore bool   `json:"has_more"`
}

// KickReasonReplaced is the reason of the KICK sent to a connection replaced
// by a newer AUTH of the same (user, device).
const KickReasonReplaced = "replaced"

// KickReasonDisabled and KickReasonDeleted are the reasons of the KICK sent to the
// connections of a user an operator disabled or deleted; AUTH answers 40101 until an operator
// enables a disabled user again.
const (
	KickReasonDisabled = "disabled"
	KickReasonDeleted  = "deleted"
)

// Kick is the data of KICK; the server closes the connection after it.
type Kick struct {
	Reason string `json:"reason"`
}

// Event is the data of an EVENT push and an item of SyncInboxPage.Events:
// {"mailbox_seq"?, "type", "topic"?, …}. The fields beyond those depend on the
// type, so it stays a map of raw values that keeps 64-bit ids exact.
type Event map[string]json.RawMessage

// GetHistoryRequest is the body of GET_HISTORY; BeforeSeq 0 means the newest.
type GetHistoryRequest struct {
	Topic     string `json:"topic"`
	BeforeSeq int64  `json:"before_seq,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// GetHistoryResponse is the data of GET_HISTORY, descending seq.
type GetHistoryResponse struct {
	Messages []Message `json:"messages"`
}

// Presence states (PROTOCOL.md §3 QUERY_PRESENCE): online on any device of any node, offline
// (with last_seen when known), or unknown while the server cannot tell (its registry heals
// after a Redis loss, DESIGN §13 "Unknown until healed"): show it as unknown, not offline,
// and query again after a few seconds, backing off, until a state or a PRESENCE push comes.
const (
	PresenceOnline  = "online"
	PresenceOffline = "offline"
	PresenceUnknown = "unknown"
)

// MaxPresenceQuery is how many user ids one QUERY_PRESENCE may name.
const MaxPresenceQuery = 200

// QueryPresenceRequest is the body of QUERY_PRESENCE.
type QueryPresenceRequest struct {
	UserIDs []int64 `json:"user_ids"`
}

// QueryPresenceResponse is the data of QUERY_PRESENCE: one entry per distinct id asked.
type QueryPresenceResponse struct {
	Presence []Presence `json:"presence"`
}

// Presence is one user's state: an entry of QUERY_PRESENCE and the data of the PRESENCE
// push. LastSeen (Unix ms) is when the user was last known online, also beside an unknown
// state; 0 when never seen or hidden.
type Presence struct {
	UserID   int64  `json:"user_id"`
	State    string `json:"state"`
	LastSeen int64  `json:"last_seen,omitempty"`
}

// TypingRequest is the body of TYPING: the conversation by exactly one of Topic,
// ConversationID or ToUser, and whether the user started (true) or stopped typing.
type TypingRequest struct {
	Topic          string `json:"topic,omitempty"`
	ConversationID int64  `json:"conversation_id,omitempty"`
	ToUser         int64  `json:"to_user,omitempty"`
	Typing         bool   `json:"typing"`
}

// TypingResponse is the data of TYPING: how long (ms) the notice lasts on the other devices
// unless renewed or stopped.
type TypingResponse struct {
	ExpiresIn int64 `json:"expires_in"`
}

// TypingNotice is the data of the TYPING_NOTICE push.
type TypingNotice struct {
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	UserID         int64  `json:"user_id"`
	Typing         bool   `json:"typing"`
	ExpiresIn      int64  `json:"expires_in,omitempty"`
}

// SettingsRequest is the body of SETTINGS: the fields to change; absent fields stay, and
// an empty body only reads them.
type SettingsRequest struct {
	HidePresence *bool `json:"hide_presence,omitempty"`
	HideReceipts *bool `json:"hide_receipts,omitempty"`
}

// Settings is the data of SETTINGS: the user's settings as stored.
type Settings struct {
	HidePresence bool `json:"hide_presence"`
	HideReceipts bool `json:"hide_receipts"`
}
