package wire

// Read receipts (issue 31; PROTOCOL.md §3 RECEIPT, READ_STATE).
const (
	CmdReceipt   uint16 = 24 // server push: the peer read, or a device of the peer got, a message
	CmdReadState uint16 = 32 // client: who read a message you sent
)

// Receipt is the data of the RECEIPT push: UserID read the conversation up to ReadSeq, or a
// device of UserID got message DeliveredSeq; exactly one of the two is set.
type Receipt struct {
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	UserID         int64  `json:"user_id"`
	ReadSeq        int64  `json:"read_seq,omitempty"`
	DeliveredSeq   int64  `json:"delivered_seq,omitempty"`
}

// ReadStateRequest is the body of READ_STATE: a message by its seq in the conversation named
// by exactly one of Topic, ConversationID or ToUser.
type ReadStateRequest struct {
	Topic          string `json:"topic,omitempty"`
	ConversationID int64  `json:"conversation_id,omitempty"`
	ToUser         int64  `json:"to_user,omitempty"`
	Seq            int64  `json:"seq"`
}

// ReadState is the data of READ_STATE: Read of the Of other members read the message; Readers
// lists them (ascending ids) in conversations up to the server's receipts.group_limit members,
// and is absent above it or when nobody read it.
type ReadState struct {
	Topic          string  `json:"topic"`
	ConversationID int64   `json:"conversation_id"`
	Seq            int64   `json:"seq"`
	Read           int     `json:"read"`
	Of             int     `json:"of"`
	Readers        []int64 `json:"readers,omitempty"`
	// DeliveredSeq is, in P2P, how far the peer's devices got the conversation: every message
	// of yours up to it is delivered (✓✓), also while you were away. Absent in groups.
	DeliveredSeq int64 `json:"delivered_seq,omitempty"`
}
