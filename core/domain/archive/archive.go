// Package archive is the format of archived months (seed 000 §10): per tenant and month, one
// gzip-compressed NDJSON chunk file per run of a topic's rows and a manifest naming every
// chunk with its seq range, row count and SHA-256. The files describe themselves: each chunk
// starts with a header line and every row carries every column of the month table under its
// column name, so a month can be read back — or restored into MySQL — without this code.
package archive

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/topic"
)

// Format names written into every file, so a reader refuses files of another layout.
const (
	ChunkFormat    = "imd-archive-chunk/1"
	ManifestFormat = "imd-archive-manifest/1"
)

// Record is one row of a month table with every column of the template (seed 000 §3.1), so a
// restored table holds what the archived one held. JSON columns are kept as their stored text.
type Record struct {
	MessageID      int64      `json:"message_id"`
	Topic          string     `json:"topic"`
	GroupID        int64      `json:"group_id"`
	ConversationID int64      `json:"conversation_id"`
	Seq            int64      `json:"seqid"`
	From           int64      `json:"from_user"`
	ClientMsgID    *string    `json:"client_msg_id"`
	Type           string     `json:"msg_type"`
	Status         string     `json:"status"`
	Content        *string    `json:"content"`
	Head           *string    `json:"head"`
	Mentions       *string    `json:"mentioned_user_ids"`
	MentionAll     bool       `json:"mention_all"`
	ReplySeq       *int64     `json:"reply_seqid"`
	RootSeq        *int64     `json:"root_seqid"`
	FileCount      int32      `json:"file_count"`
	ContentSize    int32      `json:"content_size"`
	HasRisk        bool       `json:"has_risk"`
	AuditStatus    string     `json:"audit_status"`
	Version        int32      `json:"version"`
	RecalledAt     *time.Time `json:"recalled_at"`
	RecalledBy     *int64     `json:"recalled_by"`
	EditedAt       *time.Time `json:"edited_at"`
	DeletedAt      *time.Time `json:"deleted_at"`
	ExpiresAt      *time.Time `json:"expires_at"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

// Message is the record as the message store returns it from month m.
func (r Record) Message(m month.Month) (message.Message, error) {
	msg := message.Message{
		Topic: r.Topic, GroupID: r.GroupID, ConversationID: r.ConversationID, Seq: r.Seq,
		MsgID: r.MessageID, From: r.From, Type: r.Type, MentionAll: r.MentionAll,
		Status: message.Status(r.Status), Version: int(r.Version), CreatedAt: r.CreatedAt.UTC(), Month: m,
	}
	if r.ClientMsgID != nil {
		msg.ClientMsgID = *r.ClientMsgID
	}
	if r.Content != nil {
		msg.Content = json.RawMessage(*r.Content)
	}
	if r.ReplySeq != nil {
		msg.ReplySeq = *r.ReplySeq
	}
	if r.Mentions != nil {
		if err := json.Unmarshal([]byte(*r.Mentions), &msg.Mentions); err != nil {
			return message.Message{}, fmt.Errorf("decode mentions of %s seq %d: %w", r.Topic, r.Seq, err)
		}
	}
	if r.EditedAt != nil {
		msg.EditedAt = r.EditedAt.UTC()
	}
	return msg, nil
}

// RecordOf is the row the MySQL store writes for a message, the inverse of Message: the
// columns a message has no field for keep their defaults (audit "pass", updated at creation).
func RecordOf(m message.Message) (Record, error) {
	r := Record{
		MessageID: m.MsgID, Topic: m.Topic, GroupID: m.GroupID, ConversationID: m.ConversationID, Seq: m.Seq,
		From: m.From, Type: m.Type, Status: string(m.Status), MentionAll: m.MentionAll, AuditStatus: "pass",
		ContentSize: int32(len(m.Content)), Version: int32(m.Version), CreatedAt: m.CreatedAt, UpdatedAt: m.CreatedAt,
	}
	if m.ClientMsgID != "" {
		r.ClientMsgID = &m.ClientMsgID
	}
	if len(m.Content) > 0 {
		c := string(m.Content)
		r.Content = &c
	}
	if len(m.Mentions) > 0 {
		b, err := json.Marshal(m.Mentions)
		if err != nil {
			return Record{}, fmt.Errorf("encode mentions: %w", err)
		}
		s := string(b)
		r.Mentions = &s
	}
	if m.ReplySeq > 0 {
		r.ReplySeq = &m.ReplySeq
	}
	if !m.EditedAt.IsZero() {
		r.EditedAt = &m.EditedAt
	}
	if _, err := topic.Parse(m.Topic); err != nil {
		return Record{}, err
	}
	return r, nil
}

// Manifest lists everything archived of one tenant's month. It is written after every chunk
// was read back and checked, so its presence means the archive is complete.
type Manifest struct {
	Format    string       `json:"format"`
	Tenant    string       `json:"tenant"`
	Month     string       `json:"month"` // YYYYMM
	CreatedAt time.Time    `json:"created_at"`
	Rows      int64        `json:"rows"`
	Topics    []TopicEntry `json:"topics"` // ascending by topic
}

// TopicEntry is one topic's part of the month: its seq range and row count, which match the
// route mirror's segment, and its chunks in seq order.
type TopicEntry struct {
	Topic  string  `json:"topic"`
	MinSeq int64   `json:"min_seq"`
	MaxSeq int64   `json:"max_seq"`
	Count  int64   `json:"count"`
	Chunks []Chunk `json:"chunks"`
}

// Chunk is one stored file of a topic's rows.
type Chunk struct {
	Key    string `json:"key"`
	MinSeq int64  `json:"min_seq"`
	MaxSeq int64  `json:"max_seq"`
	Count  int64  `json:"count"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"` // hex, of the stored (compressed) bytes
}

// Topic returns the entry of a topic; ok=false when the month holds none of it.
func (m *Manifest) Topic(name string) (*TopicEntry, bool) {
	lo, hi := 0, len(m.Topics)
	for lo < hi {
		mid := (lo + hi) / 2
		if m.Topics[mid].Topic < name {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(m.Topics) && m.Topics[lo].Topic == name {
		return &m.Topics[lo], true
	}
	return nil, false
}

// ChunkFor returns the index of the chunk whose seq range holds seq, -1 when none does.
func (t *TopicEntry) ChunkFor(seq int64) int {
	for i, c := range t.Chunks {
		if seq >= c.MinSeq && seq <= c.MaxSeq {
			return i
		}
	}
	return -1
}

// Keys name the files of an archive; every key of a tenant's month shares MonthPrefix, so a
// purge can list and delete them.
func MonthPrefix(tenant string, m month.Month) string { return tenant + "/" + m.String() + "/" }

// ManifestKey is where a month's manifest lives.
func ManifestKey(tenant string, m month.Month) string {
	return MonthPrefix(tenant, m) + "manifest.json"
}

// ChunkKey names the n-th chunk (from 1) of a topic. Topic names are [a-z0-9_] only
// (core/domain/topic), so they are safe in object keys and file names.
func ChunkKey(tenant string, m month.Month, topic string, n int) string {
	return fmt.Sprintf("%s%s/%06d.ndjson.gz", MonthPrefix(tenant, m), topic, n)
}

// ErrNoBlob: the blob store holds no object under the key.
var ErrNoBlob = errors.New("archive object not found")

// Backlog is the delivery work still pending for a month's messages.
type Backlog struct {
	Queued, Processing, Dead int64
	// Partial: the lists were too long to inspect whole, so more may be pending.
	Partial bool
}

// Empty reports whether nothing is pending.
func (b Backlog) Empty() bool {
	return b.Queued == 0 && b.Processing == 0 && b.Dead == 0 && !b.Partial
}
