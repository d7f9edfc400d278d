package webhook

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event is the JSON body of one webhook request. ID is the same on every retry of the event,
// so a receiver dedupes on it (delivery is at least once).
type Event struct {
	ID     string          `json:"id"`
	Type   EventType       `json:"type"`
	Tenant string          `json:"tenant"`
	Topic  string          `json:"topic"`
	Seq    int64           `json:"seq"`
	At     int64           `json:"at"` // Unix ms the event happened
	Data   json.RawMessage `json:"data"`
}

// EventID names the event of type t about topic's seq: `<topic>:<seq>:<type>`.
func EventID(topic string, seq int64, t EventType) string {
	return fmt.Sprintf("%s:%d:%s", topic, seq, t)
}

// RevisionStream is the topic name under which an endpoint's cursor over the edit and recall
// records is kept beside its topic cursors (so a replay and a delete drop it with them); no
// topic name starts with "~".
const RevisionStream = "~revisions"

// Revision is an edit or a recall of a message as its change's transaction recorded it
// (im_message_revisions): the source of message.edited and message.recalled.
type Revision struct {
	ID      int64 // the record's id: the order of the stream
	Topic   string
	Seq     int64
	MsgID   int64
	Version int
	Editor  int64
	Recall  bool            // a recall; else an edit
	Content json.RawMessage // the content after an edit
	At      time.Time
}

// Type is the event type of r.
func (r Revision) Type() EventType {
	if r.Recall {
		return MessageRecalled
	}
	return MessageEdited
}

// RevisionData is the data of a message.edited or message.recalled event: the message as it
// is after the change (README "Event webhooks").
type RevisionData struct {
	Topic    string          `json:"topic"`
	Seq      int64           `json:"seq"`
	MsgID    int64           `json:"msg_id"`
	Version  int             `json:"version"`
	Editor   int64           `json:"editor"`
	Content  json.RawMessage `json:"content,omitempty"`
	EditedAt int64           `json:"edited_at"` // Unix ms of the change
}

// RevisionEventID names a revision event: `<topic>:<seq>:<type>:<version>`, since a message
// is edited more than once.
func RevisionEventID(r Revision) string {
	return fmt.Sprintf("%s:%d:%s:%d", r.Topic, r.Seq, r.Type(), r.Version)
}

// Scan is where an endpoint's passes stand: Mark is from when the next pass looks for
// changed topics, ReplayFrom the point of the last replay (zero: none), before which a topic
// met anew has no events for the endpoint.
type Scan struct {
	Mark       time.Time
	ReplayFrom time.Time
}

// DeadLetter is an event given up on after the endpoint's last attempt; its topic moved on
// (docs/DESIGN.md issue-32 part 2 "Retries, dead letters").
type DeadLetter struct {
	EndpointID int64
	Topic      string
	Seq        int64
	Type       EventType
	Attempts   int
	LastError  string
	At         time.Time
}
