package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
)

// eventWait bounds every "eventually" of these tests; the machine is loaded.
const eventWait = 15 * time.Second

func connectHub(t *testing.T, h *hub, cfg Config) *Client {
	t.Helper()
	srv := startServer(t, "tcp", "127.0.0.1:0", withHandler(h.handle))
	cfg.Dial = Dialer(Options{Addr: srv.addr(), RequestTimeout: 5 * time.Second})
	if cfg.Token == nil {
		cfg.Token = StaticToken(goodToken)
	}
	cfg.DeviceID = 1
	cfg.MinBackoff, cfg.MaxBackoff = 5*time.Millisecond, 50*time.Millisecond
	c, err := Connect(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func nextEvent(t *testing.T, c *Client) Event {
	t.Helper()
	select {
	case e, ok := <-c.Events():
		if !ok {
			t.Fatalf("events closed: %v", c.Err())
		}
		return e
	case <-time.After(eventWait):
		t.Fatal("no event")
		return Event{}
	}
}

// waitKind skips events until one of kind.
func waitKind(t *testing.T, c *Client, kind EventKind) Event {
	t.Helper()
	for {
		if e := nextEvent(t, c); e.Kind == kind {
			return e
		} else if e.Kind == EventMessage {
			t.Fatalf("unexpected message %s/%d %s while waiting for event kind %d", e.Message.Topic, e.Message.Seq, e.Message.Content, kind)
		}
	}
}

// label names a message event: topic/seq text, and "(replayed)" when it came from catch-up.
func label(e Event) string {
	s := fmt.Sprintf("%s/%d %s", e.Message.Topic, e.Message.Seq, e.Message.Content)
	if e.Replayed {
		s += " (replayed)"
	}
	return s
}

// messages returns the next n message events.
func messages(t *testing.T, c *Client, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		if e := nextEvent(t, c); e.Kind == EventMessage {
			got = append(got, label(e))
		}
	}
	return got
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestClientCatchesUpAfterARestartOnce(t *testing.T) {
	h := newHub(t)
	h.post("grp_1", 7, "before the client") // history: never delivered
	c := connectHub(t, h, Config{})
	waitKind(t, c, EventSynced)
	h.post("grp_1", 7, "live")
	equal(t, "live", messages(t, c, 1), []string{`grp_1/2 "live"`})

	h.setDown(true)
	h.kill()
	waitKind(t, c, EventDisconnected)
	for i := range 4 { // more than a SYNC_MESSAGES page
		h.post("grp_1", 7, fmt.Sprint("missed ", i))
	}
	h.post("grp_2", 8, "new conversation")
	sent := make(chan error, 1)
	go func() {
		ack, err := c.Send(context.Background(), wire.SendMessageRequest{Topic: "grp_1", ClientMsgID: "while-down", Type: wire.TypeText, Content: json.RawMessage(`"mine"`)})
		if err == nil && ack.Seq != 7 {
			err = fmt.Errorf("ack seq %d, want 7", ack.Seq)
		}
		sent <- err
	}()
	h.setDown(false)

	waitKind(t, c, EventConnected)
	got := messages(t, c, 5)
	if err := <-sent; err != nil {
		t.Fatalf("Send across the restart: %v", err)
	}
	// Map order decides which conversation replays first; within one, seq order.
	want1 := []string{`grp_1/3 "missed 0" (replayed)`, `grp_1/4 "missed 1" (replayed)`, `grp_1/5 "missed 2" (replayed)`, `grp_1/6 "missed 3" (replayed)`}
	want2 := `grp_2/1 "new conversation" (replayed)`
	if got[0] == want2 {
		got = append(got[1:], got[0])
	}
	equal(t, "replayed", got, append(want1, want2))

	// A second restart with nothing new replays nothing: the next message is the live one.
	h.kill()
	waitKind(t, c, EventDisconnected)
	waitKind(t, c, EventSynced)
	h.post("grp_1", 7, "after")
	equal(t, "after a quiet restart", messages(t, c, 1), []string{`grp_1/8 "after"`})
	if n := len(h.stored("grp_1")); n != 8 {
		t.Errorf("grp_1 holds %d messages, want 8 (the send stored once)", n)
	}
}

func TestClientResendsAnUnacknowledgedSendWithItsID(t *testing.T) {
	h := newHub(t)
	c := connectHub(t, h, Config{})
	waitKind(t, c, EventSynced)
	h.mu.Lock()
	h.dropAcks = 2 // stored, then the connection drops before the ACK, twice
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	ack, err := c.Send(ctx, wire.SendMessageRequest{Topic: "grp_1", Type: wire.TypeText, Content: json.RawMessage(`"once"`)})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	stored := h.stored("grp_1")
	if len(stored) != 1 || stored[0].Seq != ack.Seq || stored[0].ClientMsgID != ack.ClientMsgID || ack.ClientMsgID == "" {
		t.Fatalf("stored %+v for ack %+v, want the one message", stored, ack)
	}
	// The catch-ups of the two reconnects saw the message in SYNC_MESSAGES: it is the
	// caller's own send, not a message to deliver.
	// "next" may come live or, while the last reconnect still catches up, replayed.
	h.post("grp_1", 7, "next")
	equal(t, "after the resends", []string{strings.TrimSuffix(messages(t, c, 1)[0], " (replayed)")}, []string{`grp_1/2 "next"`})
}

func TestClientHeartbeats(t *testing.T) {
	h := newHub(t)
	c := connectHub(t, h, Config{Heartbeat: 10 * time.Millisecond})
	waitKind(t, c, EventSynced)
	var first *session
	for range 5 {
		select {
		case ss := <-h.heartbeats:
			if first == nil {
				first = ss
			} else if ss != first {
				t.Fatal("heartbeats came over a second connection")
			}
		case <-time.After(eventWait):
			t.Fatal("no heartbeat")
		}
	}
	if n := h.authCount(); n != 1 {
		t.Errorf("%d AUTHs, want 1", n)
	}
}

func TestClientEnds(t *testing.T) {
	t.Run("replaced", func(t *testing.T) {
		h := newHub(t)
		c := connectHub(t, h, Config{})
		waitKind(t, c, EventSynced)
		h.kick(wire.KickReasonReplaced)
		if e := waitKind(t, c, EventPush); e.Push.Command != wire.CmdKick {
			t.Fatalf("push %d, want KICK", e.Push.Command)
		}
		waitKind(t, c, EventDisconnected)
		select {
		case _, ok := <-c.Events():
			if ok {
				t.Fatal("an event after the KICK replaced")
			}
		case <-time.After(eventWait):
			t.Fatal("client still running after KICK replaced")
		}
		if !errors.Is(c.Err(), ErrReplaced) {
			t.Errorf("Err = %v, want ErrReplaced", c.Err())
		}
		if n := h.authCount(); n != 1 {
			t.Errorf("%d AUTHs, want 1: a replaced device must not reconnect", n)
		}
		if _, err := c.Send(context.Background(), wire.SendMessageRequest{Topic: "grp_1"}); !errors.Is(err, ErrReplaced) {
			t.Errorf("Send after the end = %v, want ErrReplaced", err)
		}
	})
	t.Run("shutdown reconnects", func(t *testing.T) {
		h := newHub(t)
		c := connectHub(t, h, Config{})
		waitKind(t, c, EventSynced)
		h.kick("shutdown")
		waitKind(t, c, EventDisconnected)
		waitKind(t, c, EventSynced)
	})
	t.Run("bad token", func(t *testing.T) {
		h := newHub(t)
		srv := startServer(t, "tcp", "127.0.0.1:0", withHandler(h.handle))
		_, err := Connect(context.Background(), Config{Dial: Dialer(Options{Addr: srv.addr()}), Token: StaticToken("bad")})
		if ce, ok := errors.AsType[*CodeError](err); !ok || ce.Code != wire.CodeUnauthenticated {
			t.Fatalf("Connect = %v, want 40101", err)
		}
	})
	t.Run("Close", func(t *testing.T) {
		h := newHub(t)
		c := connectHub(t, h, Config{})
		c.Close()
		for range c.Events() {
		}
		if !errors.Is(c.Err(), ErrClosed) {
			t.Errorf("Err = %v, want ErrClosed", c.Err())
		}
	})
}

func TestClientOverWebSocket(t *testing.T) {
	h := newHub(t)
	_, url := startWebSocketServer(t, nil, []string{Subprotocol}, withHandler(h.handle))
	c, err := Connect(context.Background(), Config{Dial: Dialer(Options{Addr: url}), Token: StaticToken(goodToken), MinBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitKind(t, c, EventSynced)
	h.setDown(true)
	h.kill()
	waitKind(t, c, EventDisconnected)
	h.post("grp_1", 7, "missed")
	h.setDown(false)
	waitKind(t, c, EventConnected)
	equal(t, "replayed over WebSocket", messages(t, c, 1), []string{`grp_1/1 "missed" (replayed)`})
}

func TestClientState(t *testing.T) {
	h := newHub(t)
	c := connectHub(t, h, Config{})
	waitKind(t, c, EventSynced)
	h.post("grp_1", 7, "one")
	messages(t, c, 1)
	state := c.State()
	c.Close()

	h.post("grp_1", 7, "while the app was off")
	resumed := connectHub(t, h, Config{Resume: &state})
	waitKind(t, resumed, EventConnected)
	equal(t, "resumed", messages(t, resumed, 1), []string{`grp_1/2 "while the app was off" (replayed)`})
}

// TestClientRequests covers what the JavaScript SDK offers besides sends and events: the
// platform in AUTH, the whole conversation list and read marks.
func TestClientRequests(t *testing.T) {
	h := newHub(t)
	c := connectHub(t, h, Config{Platform: "ios"})
	waitKind(t, c, EventSynced)
	h.post("grp_1", 7, "one")
	h.post("p2p_1_7", 7, "two")
	messages(t, c, 2)
	ctx := context.Background()

	h.mu.Lock()
	platform := h.platform
	h.mu.Unlock()
	if platform != "ios" {
		t.Errorf("AUTH platform %q, want ios", platform)
	}
	dialogs, err := c.Dialogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, d := range dialogs {
		topics = append(topics, d.Topic)
	}
	slices.Sort(topics)
	equal(t, "dialogs", topics, []string{"grp_1", "p2p_1_7"})
	mark, err := c.MarkRead(ctx, "grp_1", 1)
	if err != nil || mark.Topic != "grp_1" || mark.Seq != 1 {
		t.Fatalf("MarkRead = %+v, %v", mark, err)
	}
}

// Every wait before a reconnect or a resend is a random half to all of the backoff, so the
// clients of a draining node do not come back at one instant.
func TestBackoffIsJittered(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, DefaultMinBackoff, DefaultMaxBackoff} {
		waits := map[time.Duration]bool{}
		for range 200 {
			w := jittered(d)
			if w < d/2 || w > d {
				t.Fatalf("jittered(%v) = %v, want %v to %v", d, w, d/2, d)
			}
			waits[w] = true
		}
		if d >= DefaultMinBackoff && len(waits) < 100 {
			t.Fatalf("jittered(%v): %d distinct waits of 200", d, len(waits))
		}
	}
}
