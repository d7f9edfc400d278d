// Package message holds the stored message and the rules a new message must pass before
// anything is written (seed 003 §9.4, PROTOCOL §4).
package message

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/objectkey"
	"github.com/imdhq/imd/core/domain/topic"
)

// Status of a stored message.
type Status string

const (
	StatusNormal   Status = "normal"
	StatusRecalled Status = "recalled"
	StatusDeleted  Status = "deleted"
)

// Limits of PROTOCOL §4 and seed 003 §19.
const (
	MaxClientMsgIDLen = 64
	MaxContentSize    = 64 * 1024
	MaxMentions       = 1000
)

// Types a client may send; media types carry an object-store key, never bytes.
var types = map[string]bool{
	"text": false, "image": true, "voice": true, "video": true, "sticker": false,
	"gif": true, "file": true, "location": false, "system": false,
}

// Message is one stored message of a topic. The JSON tags fix its form inside queued deliver
// jobs, which must survive a deploy.
type Message struct {
	Topic          string          `json:"topic"`
	GroupID        int64           `json:"group_id,omitempty"` // 0 for P2P topics
	ConversationID int64           `json:"conversation_id"`
	Seq            int64           `json:"seq"`
	MsgID          int64           `json:"msg_id"`
	From           int64           `json:"from"`
	ClientMsgID    string          `json:"client_msg_id"`
	Type           string          `json:"type"`
	Content        json.RawMessage `json:"content,omitempty"`
	Mentions       []int64         `json:"mentions,omitempty"`
	MentionAll     bool            `json:"mention_all,omitempty"`
	ReplySeq       int64           `json:"reply_seq,omitempty"`
	Status         Status          `json:"status"`
	Version        int             `json:"version"`
	CreatedAt      time.Time       `json:"created_at"`
	EditedAt       time.Time       `json:"edited_at,omitzero"` // zero when never edited
	Month          month.Month     `json:"month"`
}

// ValidateAppend rejects a message no message store may write: an empty or over-long topic,
// a seq or msg_id that is not positive, an over-long client_msg_id, an invalid month. Every
// store checks it before writing, so the in-memory one fails where MySQL would.
func (m Message) ValidateAppend() error {
	switch {
	case m.Topic == "" || len(m.Topic) > topic.MaxLen:
		return fmt.Errorf("append: invalid topic %q", m.Topic)
	case m.Seq <= 0 || m.MsgID <= 0:
		return fmt.Errorf("append %s: seq %d and msg_id %d must be positive", m.Topic, m.Seq, m.MsgID)
	case len(m.ClientMsgID) > MaxClientMsgIDLen:
		return fmt.Errorf("append %s: client_msg_id longer than %d", m.Topic, MaxClientMsgIDLen)
	case !m.Month.Valid():
		return fmt.Errorf("append %s: %w: %d", m.Topic, month.ErrInvalid, int32(m.Month))
	}
	return nil
}

// Draft is what a sender submits, before ids and seq exist.
type Draft struct {
	ClientMsgID string
	Type        string
	Content     json.RawMessage
	Mentions    []int64
	MentionAll  bool
	ReplySeq    int64
	// Forward is the origin reference the server itself puts under content.forward: the
	// forward command's, or the one the edited message already carries. Content may carry
	// that one only, and none at all when this is nil, so a reference always comes from the
	// server (issue 31 part 5, DESIGN §13 "Forwarding").
	Forward json.RawMessage
}

// ForwardMember is the content member that holds a forwarded copy's origin reference.
const ForwardMember = "forward"

// Validate checks a draft against the content rules; it writes nothing.
func (d Draft) Validate() error {
	if n := len(d.ClientMsgID); n < 1 || n > MaxClientMsgIDLen {
		return apperr.New(apperr.InvalidArgument, "client_msg_id must be 1-64 characters")
	}
	media, known := types[d.Type]
	if !known {
		return apperr.New(apperr.InvalidArgument, "unknown message type")
	}
	if len(d.Content) > MaxContentSize {
		return apperr.New(apperr.TooLarge, "content exceeds 64 KB")
	}
	if !isObject(d.Content) {
		return apperr.New(apperr.InvalidArgument, "content must be a JSON object")
	}
	if err := d.validateForward(d.Content); err != nil {
		return err
	}
	if media {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(d.Content, &obj); err != nil {
			return apperr.New(apperr.InvalidArgument, "content must be a JSON object")
		}
		var key string
		if err := json.Unmarshal(obj["key"], &key); err != nil || key == "" {
			return apperr.New(apperr.InvalidArgument, "media content must reference an object-store key")
		}
		// The key names a file in the object store: only an issued key's shape, like the
		// upload's, so no path in a message reaches past its directory (issue 33).
		if !objectkey.Valid(key) || objectkey.IsThumb(key) {
			return apperr.New(apperr.InvalidArgument, "content.key is not an uploaded object key")
		}
		if err := validateThumb(obj, key); err != nil {
			return err
		}
		if _, inline := obj["data"]; inline {
			return apperr.New(apperr.InvalidArgument, "media bytes are not accepted; upload and send the key")
		}
	}
	if len(d.Mentions) > MaxMentions {
		return apperr.New(apperr.InvalidArgument, "too many mentions")
	}
	if d.ReplySeq < 0 {
		return apperr.New(apperr.InvalidArgument, "reply_seq must not be negative")
	}
	return nil
}

// validateForward refuses a content.forward the server did not set. Any spelling counts (Go
// decodes a member into a struct field whatever its case, so "Forward" would pass for one), and
// every repeat of it (readers differ on which of two they keep), so each member is read in turn.
func (d Draft) validateForward(content json.RawMessage) error {
	if !mayNameForward(content) {
		return nil
	}
	refused := apperr.New(apperr.InvalidArgument, "content.forward is set by the server's forward command only")
	dec := json.NewDecoder(bytes.NewReader(content))
	if _, err := dec.Token(); err != nil { // the object's "{", which Validate has checked
		return refused
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return refused
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return refused
		}
		name, _ := tok.(string)
		if strings.EqualFold(name, ForwardMember) && (name != ForwardMember || d.Forward == nil || !SameJSON(raw, d.Forward)) {
			return refused
		}
	}
	return nil
}

// isObject tells whether content is one valid JSON object, as decoding it into a map would,
// without building the map: only media content needs its members (issue 30 part 4).
func isObject(content json.RawMessage) bool {
	t := bytes.TrimLeft(content, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(content)
}

// mayNameForward is false when no member of content can be named forward in any spelling, so
// validateForward need not read them one by one (issue 30 part 4). A name spells it only with
// the seven ASCII letters in some case (no other rune folds to one of them), and without a
// backslash in content every name is the bytes it is written as.
func mayNameForward(content []byte) bool {
	if bytes.IndexByte(content, '\\') >= 0 {
		return true
	}
	for i := 0; i+len(ForwardMember) <= len(content); i++ {
		if content[i]|0x20 == 'f' && bytes.EqualFold(content[i:i+len(ForwardMember)], forwardBytes) {
			return true
		}
	}
	return false
}

var forwardBytes = []byte(ForwardMember)

// SameJSON tells whether two JSON texts hold the same value, whatever their spacing and
// member order.
func SameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// ForwardOf is the origin reference content carries under content.forward, nil when none.
func ForwardOf(content json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(content, &obj) != nil {
		return nil
	}
	return obj[ForwardMember]
}

// MaxImageSide bounds content.width and content.height.
const MaxImageSide = 1 << 20

// validateThumb checks the optional thumbnail members of media content (issue 32): thumb_key
// only the key derived from content.key, so its readers are the original's and a message
// names no other object by it; width and height whole numbers of pixels.
func validateThumb(obj map[string]json.RawMessage, key string) error {
	if raw, ok := obj["thumb_key"]; ok {
		var thumb string
		if json.Unmarshal(raw, &thumb) != nil || !objectkey.Valid(thumb) || !objectkey.IsThumb(thumb) || objectkey.Original(thumb) != key {
			return apperr.New(apperr.InvalidArgument, "content.thumb_key is not the thumbnail key of content.key")
		}
	}
	for _, name := range []string{"width", "height"} {
		raw, ok := obj[name]
		if !ok {
			continue
		}
		var n int64
		if json.Unmarshal(raw, &n) != nil || n < 1 || n > MaxImageSide {
			return apperr.New(apperr.InvalidArgument, "content."+name+" must be a whole number of pixels, 1-"+strconv.Itoa(MaxImageSide))
		}
	}
	return nil
}

// MediaKey is the object key a media draft references; false for other types. It reads a
// draft Validate accepted.
func (d Draft) MediaKey() (string, bool) {
	if !types[d.Type] {
		return "", false
	}
	// The exact member "key", as Validate reads it: a struct field would also take "KEY".
	var obj map[string]json.RawMessage
	var key string
	if json.Unmarshal(d.Content, &obj) != nil || json.Unmarshal(obj["key"], &key) != nil || key == "" {
		return "", false
	}
	return key, true
}

// Hash fingerprints the payload so a reused client_msg_id with different content is told
// apart from a retry (DESIGN §1 "Dedup strength").
func (d Draft) Hash() string {
	h := sha256.New()
	var num [8]byte
	writeField := func(b []byte) {
		binary.BigEndian.PutUint64(num[:], uint64(len(b)))
		h.Write(num[:])
		h.Write(b)
	}
	writeField([]byte(d.Type))
	var compact bytes.Buffer
	if json.Compact(&compact, d.Content) == nil {
		writeField(compact.Bytes())
	} else {
		writeField(d.Content)
	}
	for _, m := range d.Mentions {
		binary.BigEndian.PutUint64(num[:], uint64(m))
		h.Write(num[:])
	}
	flags := []byte{0}
	if d.MentionAll {
		flags[0] = 1
	}
	h.Write(flags)
	binary.BigEndian.PutUint64(num[:], uint64(d.ReplySeq))
	h.Write(num[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// ErrNotFound: no such message.
var ErrNotFound = apperr.New(apperr.NotFound, "message not found")

// PageQuery reads one topic of one month in seq order.
type PageQuery struct {
	Topic string
	// After/Before bound seqs exclusively; 0 means unbounded.
	After  int64
	Before int64
	Limit  int
	Desc   bool
	// Viewer, when set, hides the ranges that user deleted for themself (im_dellog).
	Viewer int64
	// IncludeDeleted returns tombstones too (sync shows them so clients see no gap).
	IncludeDeleted bool
}

// Bounds are the query's exclusive seq bounds with "unbounded" made explicit: Before 0 (or
// less) is past every seq, After below 0 is 0.
func (q PageQuery) Bounds() (after, before int64) {
	before = q.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	return max(q.After, 0), before
}

// Takes reports whether the page holds a message of the topic with seq and status, the
// viewer's deleted ranges aside.
func (q PageQuery) Takes(m Message) bool {
	after, before := q.Bounds()
	return m.Topic == q.Topic && m.Seq > after && m.Seq < before && (q.IncludeDeleted || m.Status != StatusDeleted)
}

// Compare orders messages as the page returns them: by seq, descending when Desc.
func (q PageQuery) Compare(a, b Message) int {
	if q.Desc {
		return cmp.Compare(b.Seq, a.Seq)
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// NewestFirst orders search results as every month source returns them (ports.MessageSearch):
// created_at descending, then seq, then msg_id descending, so that the merge of several months
// and sources keeps one order.
func NewestFirst(a, b Message) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.Seq, a.Seq), cmp.Compare(b.MsgID, a.MsgID))
}
