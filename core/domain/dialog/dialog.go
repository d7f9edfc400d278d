// Package dialog holds a user's conversation list as the inbox keeps it (seed 003 §11): one
// entry per conversation, scored by the time of its last message, with an unread count and a
// short preview of that message, so a list page never reads message bodies.
package dialog

import (
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/imdhq/imd/core/domain/message"
)

// MaxPreviewRunes bounds the text kept in a preview.
const MaxPreviewRunes = 64

// Preview is the short form of a conversation's last message (seed 003 §11 preview:{cid}):
// ids, type, sender and at most MaxPreviewRunes of text, never the whole content. After a
// rebuild from MySQL it holds only the ids and seq.
type Preview struct {
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	MsgID          int64  `json:"msg_id"`
	Seq            int64  `json:"seq"`
	Type           string `json:"type,omitempty"`
	Text           string `json:"text,omitempty"`
	From           int64  `json:"from,omitempty"`
	CreatedAt      int64  `json:"created_at,omitempty"` // Unix ms
}

// PreviewOf returns the preview of m: the "text" field of its content, cut to MaxPreviewRunes.
// Media messages have no text; clients render them by type.
func PreviewOf(m message.Message) Preview {
	p := Preview{
		Topic: m.Topic, ConversationID: m.ConversationID, MsgID: m.MsgID, Seq: m.Seq,
		Type: m.Type, From: m.From, CreatedAt: m.CreatedAt.UnixMilli(),
	}
	var content struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &content) == nil {
		p.Text = truncate(content.Text, MaxPreviewRunes)
	}
	return p
}

func truncate(s string, runes int) string {
	if utf8.RuneCountInString(s) <= runes {
		return s
	}
	i := 0
	for n := 0; n < runes; n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// ScoreOf is the list score of a message: its creation time in Unix milliseconds.
func ScoreOf(t time.Time) int64 { return t.UnixMilli() }

// CountsAsUnread tells whether m is news for its recipients. A topic event (DESIGN §1: the
// `system` message that records a recall, edit or delete of an earlier message) is not: it
// moves the conversation up so clients sync it, but adds nothing unread.
func CountsAsUnread(m message.Message) bool {
	if m.Type != "system" {
		return true
	}
	var e struct {
		Event message.Action `json:"event"`
	}
	if json.Unmarshal(m.Content, &e) != nil {
		return true
	}
	switch e.Event {
	case message.ActionRecall, message.ActionEdit, message.ActionDelete:
		return false
	}
	return true
}

// Update is what one message changes in its recipients' lists. Recipients come in batches;
// each batch acts at most once per message, atomically with its list changes, so a crash
// between a batch and its mark can never count a message twice. The message is named by Once
// and, equally, by Preview.Seq in its conversation (a conversation is one topic, DESIGN §1.3):
// a store may mark either (the Redis one marks seq ranges, DESIGN §11).
type Update struct {
	ConversationID int64
	Score          int64 // ScoreOf the message
	Sender         int64 // re-scored, never counted as unread
	// Silent re-scores every recipient's dialog where it is, counting nothing (a message that
	// does not CountsAsUnread).
	Silent  bool
	Preview Preview
	Once    string        // the job's identity, the message's
	OnceTTL time.Duration // how long the batch marks live at least
	Batches []Batch
}

// UpdateOf is what message m changes in the lists of the batches' users: acting once under
// once, whose markers live ttl. The deliver workers and the list repair build it alike, so a
// message the repair re-applies changes the lists as its deliver job would have.
func UpdateOf(m message.Message, once string, ttl time.Duration, batches []Batch) Update {
	return Update{
		ConversationID: m.ConversationID, Score: ScoreOf(m.CreatedAt), Sender: m.From,
		Silent: !CountsAsUnread(m), Preview: PreviewOf(m), Once: once, OnceTTL: ttl, Batches: batches,
	}
}

// ListBatches is how many batches the recipients of one message are split into, by user id.
// A batch is one atomic list change: enough batches keep a 100,000-member group's changes
// short, and the split depends on the user id only, so a retry after membership changed still
// finds each user in the batch that already counted them.
const ListBatches = 64

// BatchesOf splits users into their list batches, by index.
func BatchesOf(users []int64) []Batch {
	byIndex := make(map[int][]int64)
	for _, u := range users {
		i := int(uint64(u) % ListBatches)
		byIndex[i] = append(byIndex[i], u)
	}
	out := make([]Batch, 0, len(byIndex))
	for i, us := range byIndex {
		out = append(out, Batch{Index: i, Users: us})
	}
	slices.SortFunc(out, func(a, b Batch) int { return a.Index - b.Index })
	return out
}

// Runs splits updates into runs of consecutive updates of one conversation to the same
// batches with markers of the same lifetime. A list store may apply a run together: its effect
// is that of its updates one after another.
func Runs(us []Update) [][]Update {
	var runs [][]Update
	for i, u := range us {
		if i > 0 {
			prev := us[i-1]
			if u.ConversationID == prev.ConversationID && u.OnceTTL == prev.OnceTTL && sameBatches(u.Batches, prev.Batches) {
				runs[len(runs)-1] = append(runs[len(runs)-1], u)
				continue
			}
		}
		runs = append(runs, []Update{u})
	}
	return runs
}

func sameBatches(a, b []Batch) bool {
	return slices.EqualFunc(a, b, func(x, y Batch) bool { return x.Index == y.Index && slices.Equal(x.Users, y.Users) })
}

// Batch is a set of recipients whose lists change together.
type Batch struct {
	Index int // stable for a user across retries of the job
	Users []int64
}

// Applied reports one batch of an Update.
type Applied struct {
	// First is false when an earlier attempt applied the batch already; nothing changed now.
	First bool
	// Muted lists the batch's users who muted the conversation (whether or not First), whom the
	// message may alert: the sender may be left out, since no alert goes to them.
	Muted []int64
}

// Entry is one conversation of a user's list as the list store keeps it.
type Entry struct {
	ConversationID int64
	Score          int64
	Unread         int64
	Muted          bool
	Pinned         bool
	// Preview is the zero value when none is stored.
	Preview Preview
}

// State is a user's membership of a conversation as MySQL keeps it: the conversation's last
// message (t_conversations) and the user's read watermark and mute flag
// (t_conversation_members). It is the truth the list is rebuilt from after Redis loss.
type State struct {
	ConversationID int64
	Topic          string
	LastSeq        int64
	LastMsgID      int64
	LastMsgAt      time.Time
	ReadSeq        int64
	ReadMsgID      int64
	Muted          bool
}

// Unread is the rebuilt unread count: messages after the read watermark. It also counts the
// user's own messages and tombstones after it, which the live count skips, so a rebuilt count
// may be a little high. Muted conversations count nothing, as live.
func (s State) Unread() int64 {
	if s.Muted {
		return 0
	}
	return max(0, s.LastSeq-s.ReadSeq)
}

// Preview is what a rebuild knows of the last message: ids and seq, no text.
func (s State) Preview() Preview {
	return Preview{Topic: s.Topic, ConversationID: s.ConversationID, MsgID: s.LastMsgID, Seq: s.LastSeq, CreatedAt: s.LastMsgAt.UnixMilli()}
}

// Gap is a run of a conversation's seqs, From to To, that a deliver consumer went past without
// their jobs: it gave up waiting for them, or stopped while holding later ones (seed 003 §20
// item 13, issue 33). A seq of a gap is a send that failed (a hole the sweeper closes), a job
// still on its way (it comes late and acts then), or a job the queue lost, whose message the
// recipients' lists never counted: the list repair (core/loop/listrepair) re-applies the
// gap's stored messages.
type Gap struct {
	Topic          string
	ConversationID int64
	From, To       int64
	// Noted is when the gap was first noted; a list store fills it in on reads.
	Noted time.Time
}

// Watermark is a user's read position in a conversation: the last message read (seed 003
// §14). It never moves back.
type Watermark struct {
	Topic          string
	ConversationID int64
	Seq            int64
	MsgID          int64
}
