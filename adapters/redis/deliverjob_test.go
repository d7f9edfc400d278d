package redis

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
)

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

// TestJobsDecodeAsWritten: the consumers' decoder (encoding/json v2) reads every job the way
// encoding/json, which writes them, does.
func TestJobsDecodeAsWritten(t *testing.T) {
	for name, job := range sampleJobs() {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(job)
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
