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

func sampleJobs() map[string]delivery.Job {
	at := time.Date(2031, 1, 10, 8, 30, 0, 123_000_000, time.UTC)
	msg := &message.Message{
		Topic: "grp_7", GroupID: 7, ConversationID: 70, Seq: 12, MsgID: 99, From: 3, ClientMsgID: "c-1",
		Type: "text", Content: json.RawMessage(`{"text":"你好 \u2028 <b>&amp;","n":1.5e3}`), Mentions: []int64{4, 5}, MentionAll: true,
		ReplySeq: 11, Status: "normal", Version: 2, CreatedAt: at, EditedAt: at.Add(time.Second), Month: 203101,
	}
	return map[string]delivery.Job{
		"message": {Tenant: "t1", Kind: delivery.KindMessage, MsgID: 99, Topic: "grp_7", ConversationID: 70, From: 3, ExcludeDevice: 1 << 63,
			NotPush: true, NotMailbox: true, Message: msg, Attempts: 2, QueuedAt: at.UnixMilli()},
		"p2p to recipients": {Tenant: "t1", Kind: delivery.KindMessage, MsgID: 100, Topic: "p2p_3_4", ConversationID: 71, From: 3,
			Recipients: []int64{3, 4}, Message: &message.Message{Topic: "p2p_3_4", Seq: 1, MsgID: 100, From: 3, Type: "text", CreatedAt: at}},
		"event": {Tenant: "t1", Kind: delivery.KindRead, MsgID: 5, Topic: "grp_7", From: 4, Event: json.RawMessage(`{"seq":12,"user":4}`)},
		"empty": {},
	}
}

// TestJobsDecodeAsWritten: the consumers' decoder (encoding/json v2) reads every job the send
// path writes (marshalJSON) the way encoding/json does.
func TestJobsDecodeAsWritten(t *testing.T) {
	for name, job := range sampleJobs() {
		t.Run(name, func(t *testing.T) {
			raw, err := marshalJSON(job)
			if err != nil {
				t.Fatal(err)
			}
			var want delivery.Job
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			got, err := decodeJob(string(raw))
			if err != nil {
				t.Fatalf("decodeJob(%s): %v", raw, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeJob(%s) =\n%+v\nwant\n%+v", raw, got, want)
			}
		})
	}
	for _, bad := range []string{"", "not json", `{"msg_id":"x"}`, `{"tenant":"t1"`, `[1]`} {
		if _, err := decodeJob(bad); err == nil {
			t.Errorf("decodeJob(%q) accepted", bad)
		}
	}
}

func BenchmarkDecodeJob(b *testing.B) {
	raw, err := json.Marshal(sampleJobs()["message"])
	if err != nil {
		b.Fatal(err)
	}
	b.Run("v1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var job delivery.Job
			if err := json.Unmarshal(raw, &job); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("v2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeJob(string(raw)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
