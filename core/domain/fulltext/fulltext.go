// Package fulltext holds what the long-term search index stores and answers (seed 000 §6.6):
// documents keyed by topic+seq with the searchable text of a message, and hits that are
// topic+seq only — the server reads the messages themselves from the month tables or the
// archive and checks the reader's rights again before returning them.
package fulltext

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
)

// Doc is one indexed message.
type Doc struct {
	Topic     string
	Seq       int64
	Month     month.Month
	Text      string
	CreatedAt time.Time
}

// Key names a document.
type Key struct {
	Topic string
	Seq   int64
}

// Query is one search of a tenant's index.
type Query struct {
	Text string
	// Topics limits the hits to these topics (a user's conversations); nil searches every
	// topic (an operator's search).
	Topics []string
	// From ≤ created_at < To when set.
	From, To time.Time
	Offset   int
	Limit    int
}

// Hit is a match: where the message is, nothing of it.
type Hit struct {
	Topic string
	Seq   int64
}

// maxText bounds the indexed text of one message.
const maxText = 8 << 10

// DocOf returns the index document of a message; ok=false when it has nothing to search
// (not a normal message, or no text).
func DocOf(m message.Message) (Doc, bool) {
	if m.Status != message.StatusNormal || m.Type == "system" {
		return Doc{}, false
	}
	text := TextOf(m.Content)
	if text == "" {
		return Doc{}, false
	}
	return Doc{Topic: m.Topic, Seq: m.Seq, Month: m.Month, Text: text, CreatedAt: m.CreatedAt}, true
}

// searchable are the content fields people search for: a text's text, a file's name, a
// location's title.
var searchable = []string{"text", "name", "title", "address"}

// TextOf extracts the searchable text of a message's content.
func TextOf(content json.RawMessage) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(content, &fields) != nil {
		return ""
	}
	var parts []string
	for _, f := range searchable {
		var s string
		if json.Unmarshal(fields[f], &s) == nil && strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	text := strings.Join(parts, "\n")
	if len(text) > maxText {
		text = strings.ToValidUTF8(text[:maxText], "")
	}
	return text
}
