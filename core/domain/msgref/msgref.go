// Package msgref holds what points at a message from outside its month table: a user's saved
// messages and a group's file index. A reference names topic+seq only, never a table or month,
// so it keeps resolving while the message moves between months, archive and restore (seed 000
// §8, §10).
package msgref

import (
	"encoding/json"
	"path"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/topic"
)

// Favorite is a message a user saved.
type Favorite struct {
	ID        int64 // cursor: newer favorites have larger ids
	User      int64
	Topic     string
	Seq       int64
	CreatedAt time.Time
}

// File is one entry of a group's file index: a file message, described without reading it.
type File struct {
	Topic       string
	Seq         int64
	MsgID       int64
	From        int64
	Name        string
	Size        int64
	Key         string // object-store key
	ContentType string
	CreatedAt   time.Time
}

// fileContent is the content of a `file` message as clients send it.
type fileContent struct {
	Key         string `json:"key"`
	Name        string `json:"name"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
	Mime        string `json:"mime"`
}

// Limits of the stored file columns.
const (
	MaxFileName = 255
	MaxFileKey  = 512
	maxMime     = 127
)

// FileOf returns the file index entry of a message; ok=false for anything but a normal `file`
// message of a group topic with an object key.
func FileOf(m message.Message) (File, bool) {
	if m.Type != "file" || m.Status != message.StatusNormal {
		return File{}, false
	}
	if p, err := topic.Parse(m.Topic); err != nil || p.Kind != topic.Group {
		return File{}, false
	}
	var c fileContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Key == "" || len(c.Key) > MaxFileKey {
		return File{}, false
	}
	name := c.Name
	if name == "" {
		name = path.Base(c.Key)
	}
	ct := c.ContentType
	if ct == "" {
		ct = c.Mime
	}
	return File{
		Topic: m.Topic, Seq: m.Seq, MsgID: m.MsgID, From: m.From, Name: clip(name, MaxFileName),
		Size: max(c.Size, 0), Key: c.Key, ContentType: clip(ct, maxMime), CreatedAt: m.CreatedAt,
	}, true
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// Change is a recall, edit or delete-for-all of a message, as its topic event announces it
// (core/usecase/modify writes one `system` message per change).
type Change struct {
	Action message.Action
	Seq    int64
}

// ChangeOf reads the change a topic event announces; ok=false for any other message.
func ChangeOf(m message.Message) (Change, bool) {
	if m.Type != "system" || m.Status != message.StatusNormal {
		return Change{}, false
	}
	var e struct {
		Event message.Action `json:"event"`
		Seq   int64          `json:"seq"`
	}
	if json.Unmarshal(m.Content, &e) != nil || e.Seq <= 0 {
		return Change{}, false
	}
	switch e.Event {
	case message.ActionRecall, message.ActionEdit, message.ActionDelete:
		return Change{Action: e.Event, Seq: e.Seq}, true
	}
	return Change{}, false
}
