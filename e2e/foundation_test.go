package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// TestMessageFromClientToClient is the foundation acceptance of issue 2: two users in a group,
// 200 concurrent sends, exactly-once delivery, continuous seqs, idempotent retry, catch-up sync
// and admin lookup, all through the real binary, MariaDB and Redis.
func TestMessageFromClientToClient(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	tokA, tokB := srv.User(1001), srv.User(1002)
	topic := srv.Group(77, 1001, 1002)
	a := srv.Connect(ctx, tokA, 1)
	aOther := srv.Connect(ctx, tokA, 2)
	b := srv.Connect(ctx, tokB, 1)

	const n = 200
	acks := make([]wire.SendAck, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ack, err := a.Send(ctx, textMessage(topic, fmt.Sprintf("cm-%d", i), fmt.Sprintf("hello %d", i)))
			if err != nil {
				errs <- fmt.Errorf("send %d: %w", i, err)
				return
			}
			acks[i] = ack
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	seen := make(map[int64]bool)
	for i, ack := range acks {
		if ack.Seq < 1 || ack.Seq > n || seen[ack.Seq] {
			t.Fatalf("ack %d has seq %d: seqs must be exactly 1..%d", i, ack.Seq, n)
		}
		seen[ack.Seq] = true
		if ack.Topic != topic || ack.ClientMsgID != fmt.Sprintf("cm-%d", i) || ack.MsgID == 0 || ack.ConversationID == 0 {
			t.Fatalf("ack %d incomplete: %+v", i, ack)
		}
	}

	t.Run("each MESSAGE reaches the other member exactly once", func(t *testing.T) {
		got := collectMessages(t, b, n, 30*time.Second)
		for seq := int64(1); seq <= n; seq++ {
			if got[seq] != 1 {
				t.Fatalf("seq %d delivered %d times to B", seq, got[seq])
			}
		}
	})
	t.Run("the sender's other device receives, the sending device does not", func(t *testing.T) {
		got := collectMessages(t, aOther, n, 30*time.Second)
		if len(got) != n {
			t.Fatalf("other device got %d of %d", len(got), n)
		}
		assertNoMessage(t, a, 500*time.Millisecond)
	})
	t.Run("a retry returns the same seq and msg_id", func(t *testing.T) {
		again, err := a.Send(ctx, textMessage(topic, "cm-17", "hello 17"))
		if err != nil {
			t.Fatal(err)
		}
		if again.Seq != acks[17].Seq || again.MsgID != acks[17].MsgID {
			t.Fatalf("retry got seq %d msg %d, first %d %d", again.Seq, again.MsgID, acks[17].Seq, acks[17].MsgID)
		}
		assertNoMessage(t, b, 500*time.Millisecond)
	})
	t.Run("the same client_msg_id with other content is a conflict", func(t *testing.T) {
		_, err := a.Send(ctx, textMessage(topic, "cm-17", "something else"))
		assertCode(t, err, wire.CodeConflict)
	})
	t.Run("SYNC_MESSAGES from 0 returns all in order", func(t *testing.T) {
		msgs, fin, err := b.SyncMessages(ctx, topic, 0, 200)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != n || fin.HasMore || fin.LastSeq != n {
			t.Fatalf("sync got %d messages, finish %+v", len(msgs), fin)
		}
		for i, m := range msgs {
			if m.Seq != int64(i+1) || m.From != 1001 || m.Topic != topic {
				t.Fatalf("message %d out of order or wrong: %+v", i, m)
			}
		}
		msgs, fin, err = b.SyncMessages(ctx, topic, 150, 20)
		if err != nil || len(msgs) != 20 || msgs[0].Seq != 151 || !fin.HasMore || fin.LastSeq != 170 {
			t.Fatalf("paged sync: %d msgs, %+v, %v", len(msgs), fin, err)
		}
	})
	t.Run("GET_HISTORY pages backward", func(t *testing.T) {
		msgs, err := b.History(ctx, topic, 0, 50)
		if err != nil || len(msgs) != 50 || msgs[0].Seq != n || msgs[49].Seq != n-49 {
			t.Fatalf("history: %d msgs, err %v", len(msgs), err)
		}
	})
	t.Run("admin looks up seq 1", func(t *testing.T) {
		var m wire.Message
		srv.MustAdmin("GET", "/topics/"+topic+"/messages/1", nil, &m)
		var content map[string]string
		_ = json.Unmarshal(m.Content, &content)
		if m.Seq != 1 || m.Topic != topic || m.From != 1001 || content["text"] == "" {
			t.Fatalf("admin lookup: %+v", m)
		}
		if code := srv.Admin("GET", "/topics/"+topic+"/messages/9999", nil, nil); code != 404 {
			t.Fatalf("missing seq: HTTP %d", code)
		}
	})
	t.Run("a non-member cannot send", func(t *testing.T) {
		c := srv.Connect(ctx, srv.User(1003), 1)
		_, err := c.Send(ctx, textMessage(topic, "x-1", "let me in"))
		assertCode(t, err, wire.CodeForbidden)
	})
}

func TestProtocolGuards(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("any command before AUTH is 40101", func(t *testing.T) {
		c := srv.Dial(ctx)
		_, err := c.Send(ctx, textMessage("grp_1", "c1", "hi"))
		assertCode(t, err, wire.CodeUnauthenticated)
		if _, _, err := c.SyncMessages(ctx, "grp_1", 0, 10); !isCode(err, wire.CodeUnauthenticated) {
			t.Fatalf("sync before auth: %v", err)
		}
		if err := c.Heartbeat(ctx); err != nil {
			t.Fatalf("heartbeat is allowed before auth: %v", err)
		}
	})
	t.Run("a bad token is 40101", func(t *testing.T) {
		c := srv.Dial(ctx)
		_, err := c.Auth(ctx, "not-a-token", 1)
		assertCode(t, err, wire.CodeUnauthenticated)
	})
	t.Run("bad magic closes the connection", func(t *testing.T) {
		c := srv.Dial(ctx)
		raw := make([]byte, 23)
		binary.BigEndian.PutUint16(raw, 0x1234)
		raw[2] = 1
		assertClosedAfter(t, c, raw)
	})
	t.Run("body_length over 65536 closes the connection", func(t *testing.T) {
		c := srv.Dial(ctx)
		raw := make([]byte, 23)
		binary.BigEndian.PutUint16(raw[0:], 0x494D)
		raw[2] = 1
		binary.BigEndian.PutUint16(raw[3:], 2)
		binary.BigEndian.PutUint32(raw[19:], 65537)
		assertClosedAfter(t, c, raw)
	})
}

func textMessage(topic, clientID, text string) wire.SendMessageRequest {
	content, _ := json.Marshal(map[string]string{"text": text})
	return wire.SendMessageRequest{Topic: topic, ClientMsgID: clientID, Type: "text", Content: content}
}

// collectMessages counts MESSAGE pushes by seq until want distinct seqs arrived or limit passed,
// then waits a little more so duplicates would show.
func collectMessages(t *testing.T, c *client.Conn, want int, limit time.Duration) map[int64]int {
	t.Helper()
	got := make(map[int64]int)
	deadline := time.After(limit)
	for len(got) < want {
		select {
		case p := <-c.Pushes():
			if p.Command == wire.CmdMessage && p.Message != nil {
				got[p.Message.Seq]++
			}
		case <-deadline:
			t.Fatalf("received %d of %d messages", len(got), want)
		}
	}
	settle := time.After(300 * time.Millisecond)
	for {
		select {
		case p := <-c.Pushes():
			if p.Command == wire.CmdMessage && p.Message != nil {
				got[p.Message.Seq]++
			}
		case <-settle:
			return got
		}
	}
}

func assertNoMessage(t *testing.T, c *client.Conn, wait time.Duration) {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case p := <-c.Pushes():
			if p.Command == wire.CmdMessage {
				t.Fatalf("unexpected MESSAGE push: %+v", p.Message)
			}
		case <-timeout:
			return
		}
	}
}

func isCode(err error, code int) bool {
	var ce *client.CodeError
	return errors.As(err, &ce) && ce.Code == code
}

func assertCode(t *testing.T, err error, code int) {
	t.Helper()
	if !isCode(err, code) {
		t.Fatalf("got %v, want code %d", err, code)
	}
}

func assertClosedAfter(t *testing.T, c *client.Conn, raw []byte) {
	t.Helper()
	if err := c.WriteRaw(raw); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Closed():
	case <-time.After(5 * time.Second):
		t.Fatal("server kept the connection open")
	}
}
