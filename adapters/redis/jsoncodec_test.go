package redis

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
)

// TestMarshalJSONDecodesAsEncodingJSON: what the send path encodes decodes with encoding/json
// (the readers of queued jobs and cached messages) to the value encoding/json's own output gives.
func TestMarshalJSONDecodesAsEncodingJSON(t *testing.T) {
	m := message.Message{
		Topic: "p2p_1_2", ConversationID: 9, Seq: 23, MsgID: 253748250765426689, From: 1, ClientMsgID: "x\xffy<&>",
		Type: "text", Content: json.RawMessage("{ \"text\" : \"<a&b> \u2028 x\", \"n\": [1, 2] }"),
		Status: message.StatusNormal, Version: 1, CreatedAt: time.UnixMilli(1796187897413).UTC(), Month: 202612,
	}
	mentions := m
	mentions.Mentions, mentions.MentionAll, mentions.ReplySeq, mentions.EditedAt = []int64{}, true, 4, m.CreatedAt
	for name, v := range map[string]any{
		"message":          m,
		"message, all set": mentions,
		"job": delivery.Job{Tenant: "t", Kind: delivery.KindMessage, MsgID: m.MsgID, Topic: m.Topic, From: 1,
			ExcludeDevice: 3, Recipients: []int64{1, 2}, Message: &m, QueuedAt: 1796187897413},
		"empty job": delivery.Job{},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := marshalJSON(v)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("invalid JSON %s", got)
			}
			typ := reflect.TypeOf(v)
			a, b := reflect.New(typ), reflect.New(typ)
			if err := json.Unmarshal(want, a.Interface()); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, b.Interface()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a.Interface(), b.Interface()) {
				t.Fatalf("decoded differently:\nencoding/json %s\nmarshalJSON   %s", want, got)
			}
		})
	}
}
