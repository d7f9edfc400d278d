// Package delivery describes the jobs of the reliable deliver queue (seed 003 §12) and what a
// worker pushes to connected devices.
package delivery

import (
	"encoding/json"
	"strconv"

	"github.com/imdhq/imd/core/domain/message"
)

// Kind of a deliver job or push.
type Kind string

const (
	KindMessage Kind = "message" // a new message of a topic
	KindRead    Kind = "read"    // a read watermark, to the reader's other devices
	KindEvent   Kind = "event"   // a control event (recall, edit, membership…)
	// Pushes that never become jobs: live only, nothing stored, nothing missed (issue 31).
	KindPresence Kind = "presence" // a user came online or went offline, to those who see it
	KindTyping   Kind = "typing"   // a member started or stopped typing, to the other members
	KindReceipt  Kind = "receipt"  // the peer read or got a P2P message, to the sender
)

// Subscribed reports whether a connection gets pushes of kind k only when it named k in its
// AUTH's `subscribe` (docs/PROTOCOL.md, AUTH): these came after the base protocol, and a
// client written against it reads every push as one of its own commands (DESIGN §13).
func (k Kind) Subscribed() bool { return k == KindPresence || k == KindTyping || k == KindReceipt }

// Job is one unit of fan-out. It carries the message so workers never read MySQL.
type Job struct {
	Tenant         string           `json:"tenant"`
	Kind           Kind             `json:"kind"`
	MsgID          int64            `json:"msg_id"`
	Topic          string           `json:"topic"`
	ConversationID int64            `json:"conversation_id"`
	From           int64            `json:"from"`
	ExcludeDevice  uint64           `json:"exclude_device,omitempty"` // the sending device of From
	NotPush        bool             `json:"not_push,omitempty"`
	NotMailbox     bool             `json:"not_mailbox,omitempty"`
	Recipients     []int64          `json:"recipients,omitempty"` // nil: every member of Topic
	Message        *message.Message `json:"message,omitempty"`
	Event          json.RawMessage  `json:"event,omitempty"`
	Attempts       int              `json:"attempts,omitempty"`
	// Resent: queued by a resend whose dedup record did not say the message was queued
	// (ports.QueuedMarks). A send that died between its enqueue and that mark queued it
	// already, so the worker pushes this job only if no job of the message is marked done.
	Resent bool `json:"resent,omitempty"`
	// QueuedAt is when Push queued the job (Unix ms; a retry keeps it). A partition is FIFO, so
	// a consumer that took a job queued at T took (about) everything queued before T.
	QueuedAt int64 `json:"queued_at,omitempty"`
	// Receipt is the queue's handle of a taken job (set by the queue adapter, never serialized
	// by callers) so Ack removes exactly this job.
	Receipt string `json:"-"`
}

// DoneKey is the identity under which a job acts at most once (deliver:done:{msg_id}).
func (j Job) DoneKey() string {
	switch j.Kind {
	case KindMessage:
		return "m" + itoa(j.MsgID)
	case KindRead:
		// Every member may read the same message: each reader's watermark acts once.
		return "read" + itoa(j.From) + ":" + itoa(j.MsgID)
	}
	return string(j.Kind) + itoa(j.MsgID)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// PartitionOf is the queue partition of a topic's jobs among n: every job of a topic goes to
// one partition, whose single consumer can then deliver the topic in seq order. The hash is
// fixed (FNV-1a), so every node and every boot agree on it.
func PartitionOf(topic string, n int) int {
	if n <= 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := range len(topic) {
		h = (h ^ uint32(topic[i])) * 16777619
	}
	return int(h % uint32(n))
}

// Push is what goes to online devices.
type Push struct {
	Kind    Kind
	Message *message.Message
	Data    json.RawMessage // the body of every kind but KindMessage
}

// Target excludes the sending device of the sender from a fan-out (PROTOCOL §3: a device
// receives every MESSAGE of its conversations except the ones it sent itself).
type Target struct {
	Recipients    []int64
	Sender        int64
	ExcludeDevice uint64
	// NotMailbox is the job's flag, carried along so the node that pushes knows a failed push
	// writes no MISSED_MESSAGE row.
	NotMailbox bool
	// NotPush and Muted (users who muted the conversation) are what the deliver worker decides
	// a system push by, carried along so a node that pushes for another decides it the same way.
	NotPush bool
	Muted   map[int64]bool
}

// Addressed is a push and who it goes to.
type Addressed struct {
	Target Target
	Push   Push
}

// Report counts the outcome of one fan-out.
type Report struct {
	Delivered int // frames queued to connections
	Failed    int // connected devices whose outbound queue refused the frame
	Offline   int // recipients with no connected device
}
