package protocol

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/message"
)

// TestWireStatusesAreTheDomains keeps the SDK's status strings, which cannot import the
// server's domain, equal to the statuses FromMessage writes.
func TestWireStatusesAreTheDomains(t *testing.T) {
	for _, tt := range []struct {
		wire   string
		domain message.Status
	}{
		{wire.StatusNormal, message.StatusNormal},
		{wire.StatusRecalled, message.StatusRecalled},
		{wire.StatusDeleted, message.StatusDeleted},
	} {
		if tt.wire != string(tt.domain) {
			t.Errorf("wire status %q, domain status %q", tt.wire, tt.domain)
		}
	}
}

func TestFromMessage(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	base := message.Message{
		Topic: "grp_1", ConversationID: 9, Seq: 3, MsgID: 77, From: 5, ClientMsgID: "c", Type: "text",
		Content: json.RawMessage(`{"text":"hi"}`), Status: message.StatusNormal, Version: 1, CreatedAt: created,
	}
	tests := []struct {
		name string
		edit func(*message.Message)
		want string
	}{
		{"plain", func(*message.Message) {},
			`{"topic":"grp_1","conversation_id":9,"seq":3,"msg_id":77,"from":5,"client_msg_id":"c","type":"text","content":{"text":"hi"},"mentions":[],"mention_all":false,"reply_seq":0,"status":"normal","version":1,"created_at":1767323045678}`},
		{"edited with mentions", func(m *message.Message) {
			m.Mentions, m.MentionAll, m.ReplySeq, m.Version = []int64{2, 4}, true, 1, 2
			m.EditedAt = created.Add(time.Second)
		}, `{"topic":"grp_1","conversation_id":9,"seq":3,"msg_id":77,"from":5,"client_msg_id":"c","type":"text","content":{"text":"hi"},"mentions":[2,4],"mention_all":true,"reply_seq":1,"status":"normal","version":2,"created_at":1767323045678,"edited_at":1767323046678}`},
		{"tombstone", func(m *message.Message) { m.Content, m.Status = nil, message.StatusDeleted },
			`{"topic":"grp_1","conversation_id":9,"seq":3,"msg_id":77,"from":5,"client_msg_id":"c","type":"text","content":{},"mentions":[],"mention_all":false,"reply_seq":0,"status":"deleted","version":1,"created_at":1767323045678}`},
		{"no creation time", func(m *message.Message) { m.CreatedAt = time.Time{} },
			`{"topic":"grp_1","conversation_id":9,"seq":3,"msg_id":77,"from":5,"client_msg_id":"c","type":"text","content":{"text":"hi"},"mentions":[],"mention_all":false,"reply_seq":0,"status":"normal","version":1,"created_at":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base
			tt.edit(&m)
			got, err := json.Marshal(FromMessage(m))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestFromMessagesKeepsOrderAndIsNeverNull(t *testing.T) {
	if got, _ := json.Marshal(FromMessages(nil)); string(got) != "[]" {
		t.Fatalf("empty list marshals as %s", got)
	}
	got := FromMessages([]message.Message{{Seq: 2}, {Seq: 1}})
	if len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 1 {
		t.Fatalf("order changed: %+v", got)
	}
}
