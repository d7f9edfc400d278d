// Package mailbox holds the per-user control events of seed 003 §10.3: failed pushes and
// events such as KICK, friendship or membership changes. Each user has one event sequence
// shared by all devices, so a device's cursor covers both its own events and the events for
// every device (device 0).
package mailbox

import (
	"encoding/json"
	"fmt"
	"time"
)

// Type is t_mailbox_events.event_type.
type Type int16

const (
	Recall        Type = 1
	Kick          Type = 2
	Member        Type = 3
	Friend        Type = 4
	MissedMessage Type = 5
)

// String is the type's name on the wire (EVENT "type").
func (t Type) String() string {
	switch t {
	case Recall:
		return "recall"
	case Kick:
		return "kick"
	case Member:
		return "member"
	case Friend:
		return "friend"
	case MissedMessage:
		return "missed_message"
	}
	return fmt.Sprintf("type_%d", int16(t))
}

// AllDevices addresses an event to every device of its user.
const AllDevices uint64 = 0

// MaxPayload is the column width of the payload; it holds ids, never message text.
const MaxPayload = 4096

// Event is one mailbox row.
type Event struct {
	ID             int64
	User           int64
	Device         uint64 // AllDevices or one device
	Seq            int64  // set by the mailbox when stored
	Type           Type
	ConversationID int64
	// Payload is a JSON object of ids (e.g. topic, msg_id, seq); its fields go into the EVENT
	// push next to mailbox_seq and type.
	Payload   json.RawMessage
	CreatedAt time.Time
}

// Missed is the MISSED_MESSAGE payload: which message a device did not get.
type Missed struct {
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	MsgID          int64  `json:"msg_id"`
	Seq            int64  `json:"seq"`
}

// Data is the EVENT push data and the sync item of PROTOCOL cmd 17: the payload's fields plus
// mailbox_seq, type and conversation_id, which the payload cannot override.
func (e Event) Data() (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(e.Payload) > 0 {
		if err := json.Unmarshal(e.Payload, &fields); err != nil {
			return nil, fmt.Errorf("mailbox event %d payload: %w", e.ID, err)
		}
	}
	put := func(k string, v any) error {
		raw, err := json.Marshal(v)
		fields[k] = raw
		return err
	}
	if err := put("mailbox_seq", e.Seq); err != nil {
		return nil, err
	}
	if err := put("type", e.Type.String()); err != nil {
		return nil, err
	}
	if e.ConversationID != 0 {
		if err := put("conversation_id", e.ConversationID); err != nil {
			return nil, err
		}
	}
	return json.Marshal(fields)
}

// Cursor is what a device has synced (t_device_sync_cursors).
type Cursor struct {
	User        int64
	Device      uint64
	MailboxSeq  int64
	DialogScore int64
}
