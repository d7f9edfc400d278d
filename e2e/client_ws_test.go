package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/client"
)

// TestGoClientOverWebSocketAndTCPSurvivesARestart drives the importable Go client
// (adapters/client.Client) against the real binary: one user on GET /ws, one on the frame
// listener. Messages go both ways live; imd is killed, the TCP user's sends made while it is
// down are resent by its client once it is back, and the WebSocket user's client reconnects
// and gets each of them exactly once, live or by its catch-up sync.
func TestGoClientOverWebSocketAndTCPSurvivesARestart(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const alice, bob = 401, 402
	aliceToken, bobToken := srv.User(alice), srv.User(bob)
	topic := srv.Group(40, alice, bob)

	connect := func(addr, token string, device uint64) *client.Client {
		c, err := client.Connect(ctx, client.Config{
			Dial:     client.Dialer(client.Options{Addr: addr, DialTimeout: 5 * time.Second}),
			Token:    client.StaticToken(token),
			DeviceID: device, Heartbeat: time.Second,
		})
		if err != nil {
			t.Fatalf("connect %s: %v", addr, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ws := connect("ws://"+srv.HTTPAddr+"/ws", aliceToken, 1)
	tcp := connect(srv.TCPAddr, bobToken, 1)

	// receive collects the texts of n messages c is given, failing on a (topic, seq) twice.
	receive := func(c *client.Client, n int) map[string]bool {
		t.Helper()
		got := map[string]bool{}
		seen := map[int64]bool{}
		for len(got) < n {
			select {
			case e := <-c.Events():
				if e.Kind != client.EventMessage {
					continue
				}
				if seen[e.Message.Seq] {
					t.Fatalf("seq %d delivered twice", e.Message.Seq)
				}
				seen[e.Message.Seq] = true
				got[string(e.Message.Content)] = true
			case <-ctx.Done():
				t.Fatalf("%d of %d messages arrived", len(got), n)
			}
		}
		return got
	}
	send := func(c *client.Client, text string) {
		t.Helper()
		if _, err := c.Send(ctx, textMessage(topic, "", text)); err != nil {
			t.Fatalf("send %s: %v", text, err)
		}
	}

	for i := range 3 {
		send(ws, fmt.Sprintf("ws-%d", i))
		send(tcp, fmt.Sprintf("tcp-%d", i))
	}
	if got := receive(tcp, 3); len(got) != 3 {
		t.Fatalf("TCP user got %v", got)
	}
	if got := receive(ws, 3); len(got) != 3 {
		t.Fatalf("WebSocket user got %v", got)
	}

	srv.Kill()
	sent := make(chan error, 1)
	go func() {
		// Sent while imd is down: the client holds them and resends with their ids.
		for i := range 3 {
			if _, err := tcp.Send(ctx, textMessage(topic, fmt.Sprintf("late-%d", i), fmt.Sprintf(`after-%d`, i))); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	srv.Restart()
	if err := <-sent; err != nil {
		t.Fatalf("send across the restart: %v", err)
	}
	got := receive(ws, 3)
	for i := range 3 {
		if want := fmt.Sprintf(`{"text":"after-%d"}`, i); !got[want] {
			t.Fatalf("after the restart the WebSocket user got %v, missing %s", got, want)
		}
	}
	// Nothing more comes: the next message the WebSocket user gets is one sent after all
	// the others, so no earlier one was handed over twice.
	send(tcp, "barrier")
	for {
		select {
		case e := <-ws.Events():
			if e.Kind != client.EventMessage {
				continue
			}
			if string(e.Message.Content) != `{"text":"barrier"}` {
				t.Fatalf("an extra message after the restart: seq %d %s", e.Message.Seq, e.Message.Content)
			}
			return
		case <-ctx.Done():
			t.Fatal("the barrier message never arrived")
		}
	}
}
