package webhook

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
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

// EventStream is the topic name under which an endpoint's cursor over the recorded member,
// friendship and report events is kept beside its topic cursors, like RevisionStream.
const EventStream = "~events"

// Record is one member, friendship or report event as its change's own transaction wrote it
// (t_webhook_events, docs/DESIGN.md issue-32 part 2 "Member, friendship and report events").
// Topic is the group of a member event, the pair's P2P topic of a friendship and the reported
// message's topic of a report.
type Record struct {
	ID    int64 // the record's id: the order of the stream
	Type  EventType
	Topic string
	Data  json.RawMessage // the event's data, as documented in README "Event webhooks"
	At    time.Time
}

// RecordEventID names a recorded event: `events:<id>:<type>`, the same on every retry and
// replay of the record.
func RecordEventID(r Record) string {
	return fmt.Sprintf("events:%d:%s", r.ID, r.Type)
}

// MemberData is the data of a member.joined or member.left event: the users who joined or left
// the group in one change (a group's creation names all its first members, the owner too), and
// By, the user who made the change: the member leaving, the owner or admin adding or removing
// them, the user creating the group; 0 (absent) for an operator, as in the MEMBER mailbox
// event (docs/DESIGN.md issue-32 part 2 "Member, friendship and report events").
type MemberData struct {
	Topic   string  `json:"topic"`
	GroupID int64   `json:"group_id"`
	Users   []int64 `json:"user_ids"`
	By      int64   `json:"by,omitempty"`
}

// FriendshipData is the data of a friendship.changed event: the pair, smaller id first,
// whether they are friends after the change, and By, the user who accepted or ended it (0,
// absent, for an operator).
type FriendshipData struct {
	Users   [2]int64 `json:"user_ids"`
	Friends bool     `json:"friends"`
	By      int64    `json:"by,omitempty"`
}

// ReportData is the data of a report.filed event: the report as filed.
type ReportData struct {
	ReportID int64  `json:"report_id"`
	Reporter int64  `json:"reporter"`
	Topic    string `json:"topic"`
	Seq      int64  `json:"seq"`
	Reason   string `json:"reason"`
}

// MemberRecord is the record of users joining (joined) or leaving group groupID by the change
// of user by (0: an operator).
func MemberRecord(joined bool, groupID int64, users []int64, by int64, at time.Time) Record {
	t := MemberLeft
	if joined {
		t = MemberJoined
	}
	name := topic.ForGroup(groupID)
	return record(t, name, MemberData{Topic: name, GroupID: groupID, Users: users, By: by}, at)
}

// FriendshipRecord is the record of a and b becoming friends or ceasing to be by the change of
// user by (0: an operator).
func FriendshipRecord(a, b int64, friends bool, by int64, at time.Time) Record {
	return record(FriendshipChanged, topic.ForPair(a, b), FriendshipData{Users: [2]int64{min(a, b), max(a, b)}, Friends: friends, By: by}, at)
}

// ReportRecord is the record of r being filed.
func ReportRecord(r social.Report) Record {
	return record(ReportFiled, r.Topic, ReportData{ReportID: r.ID, Reporter: r.Reporter, Topic: r.Topic, Seq: r.Seq, Reason: r.Reason}, r.CreatedAt)
}

// record encodes data, a struct of numbers and strings that always encodes.
func record(t EventType, topicName string, data any, at time.Time) Record {
	b, _ := json.Marshal(data)
	return Record{Type: t, Topic: topicName, Data: b, At: at}
}
