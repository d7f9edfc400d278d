package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
)

func testMessage(seq int64, content string) *message.Message {
	raw, _ := json.Marshal(map[string]string{"text": content})
	return &message.Message{
		Topic: "grp_1", GroupID: 1, ConversationID: 11, Seq: seq, MsgID: 1000 + seq, From: 1,
		ClientMsgID: "c", Type: "text", Content: raw, Status: message.StatusNormal, Version: 1,
		CreatedAt: testTime,
	}
}

func readPush(t *testing.T, c *rawClient) (uint32, wire.Message) {
	t.Helper()
	f := c.read()
	if f.Command != wire.CmdMessage {
		t.Fatalf("got command %d, want MESSAGE", f.Command)
	}
	var m wire.Message
	decodeData(t, envelope(t, f), &m)
	return f.SequenceID, m
}

func TestPushFansOutExceptSendingDevice(t *testing.T) {
	h := start(t, Config{CompressMin: 64}, Deps{})
	senderPhone, senderDesk := h.dial(t), h.dial(t)
	peerPhone, peerDesk := h.dial(t), h.dial(t)
	senderPhone.auth(1, 1)
	senderDesk.auth(1, 2)
	peerPhone.auth(2, 1)
	peerDesk.auth(2, 2)

	target := delivery.Target{Recipients: []int64{1, 2, 3}, Sender: 1, ExcludeDevice: 1}
	long := strings.Repeat("compressible ", 40) // over CompressMin: the shared body is zlib
	for seq := int64(1); seq <= 2; seq++ {
		rep := h.srv.Push(t.Context(), "default", target, delivery.Push{Kind: delivery.KindMessage, Message: testMessage(seq, long)})
		if want := (delivery.Report{Delivered: 3, Offline: 1}); rep != want {
			t.Fatalf("push %d report %+v, want %+v", seq, rep, want)
		}
	}
	for _, c := range []*rawClient{senderDesk, peerPhone, peerDesk} {
		for want := int64(1); want <= 2; want++ {
			pushSeq, m := readPush(t, c)
			if pushSeq != uint32(want) {
				t.Fatalf("push sequence_id %d, want %d (per connection)", pushSeq, want)
			}
			if m.Seq != want || m.MsgID != 1000+want || m.CreatedAt != testTime.UnixMilli() || m.Status != "normal" {
				t.Fatalf("pushed message %+v", m)
			}
		}
	}
	senderPhone.expectOpen(100 * time.Millisecond) // the sending device gets no echo

	other := h.srv.Push(t.Context(), "other-tenant", target, delivery.Push{Kind: delivery.KindMessage, Message: testMessage(3, "x")})
	if want := (delivery.Report{Offline: 3}); other != want {
		t.Fatalf("other tenant report %+v, want %+v", other, want)
	}
}

func TestPushReadAndEvent(t *testing.T) {
	h := start(t, Config{}, Deps{})
	c := h.dial(t)
	c.auth(5, 1)
	tests := []struct {
		kind    delivery.Kind
		wantCmd uint16
	}{
		{delivery.KindRead, wire.CmdReadMessage},
		{delivery.KindEvent, wire.CmdEvent},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			data := json.RawMessage(`{"topic":"grp_1","seq":4}`)
			rep := h.srv.Push(t.Context(), "default", delivery.Target{Recipients: []int64{5}}, delivery.Push{Kind: tt.kind, Data: data})
			if rep.Delivered != 1 {
				t.Fatalf("report %+v", rep)
			}
			f := c.read()
			env := envelope(t, f)
			if f.Command != tt.wantCmd || string(env.Data) != string(data) {
				t.Fatalf("got command %d data %s", f.Command, env.Data)
			}
		})
	}
}

// A client that never reads fills its buffers; pushes to it are dropped and counted, while
// a client that keeps reading gets every frame and Push never waits. Dropping never closes
// the slow client: once it reads again it gets exactly what was queued, and new pushes.
func TestSlowReaderDoesNotBlockPushes(t *testing.T) {
	listenerModes(t, testSlowReaderDoesNotBlockPushes)
}

func testSlowReaderDoesNotBlockPushes(t *testing.T, start func(*testing.T, Config, Deps) *harness) {
	const pushes = 200
	h := start(t, Config{OutboundBytes: 64 << 10, SocketSendBuffer: 8 << 10, CompressMin: -1}, Deps{})
	slow, fast := h.dial(t), h.dial(t)
	slow.auth(1, 1)
	fast.auth(2, 1)

	got := make(chan int64)
	go func() {
		defer close(got)
		for {
			f, err := fast.next(3 * time.Second)
			if err != nil || f.Command != wire.CmdMessage {
				return
			}
			var env wire.Envelope
			var m wire.Message
			if json.Unmarshal(f.Body, &env) != nil || json.Unmarshal(env.Data, &m) != nil {
				return
			}
			got <- m.Seq
		}
	}()
	push := func(seq int64, recipients ...int64) delivery.Report {
		started := time.Now()
		body := strings.Repeat("x", 8<<10)
		rep := h.srv.Push(t.Context(), "default", delivery.Target{Recipients: recipients},
			delivery.Push{Kind: delivery.KindMessage, Message: testMessage(seq, body)})
		if d := time.Since(started); d > 100*time.Millisecond {
			t.Fatalf("push %d took %v", seq, d)
		}
		return rep
	}
	var queuedToSlow []int64
	failed := 0
	for seq := int64(1); seq <= pushes; seq++ {
		rep := push(seq, 1, 2)
		if rep.Delivered+rep.Failed != 2 {
			t.Fatalf("push %d report %+v", seq, rep)
		}
		if s, ok := <-got; !ok || s != seq {
			t.Fatalf("reading client got seq %d (open %v), want %d", s, ok, seq)
		}
		// The reading client got it, so a failure is the slow one's.
		if rep.Failed == 0 {
			queuedToSlow = append(queuedToSlow, seq)
		}
		failed += rep.Failed
	}
	if failed < pushes/2 || h.metrics.count("outbound_drop_total") != float64(failed) {
		t.Fatalf("failed %d, outbound_drop_total %v: want equal and most of %d", failed, h.metrics.count("outbound_drop_total"), pushes)
	}
	for _, want := range queuedToSlow {
		if _, m := readPush(t, slow); m.Seq != want {
			t.Fatalf("slow reader got seq %d, want %d", m.Seq, want)
		}
	}
	seq := int64(pushes)
	eventually(t, "pushes to the reader that caught up", func() bool {
		seq++
		return push(seq, 1).Delivered == 1
	})
	if _, m := readPush(t, slow); m.Seq != seq {
		t.Fatalf("slow reader got seq %d, want %d", m.Seq, seq)
	}
}
