package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
)

// TestGoClientOverWebSocketAndTCPSurvivesARestart drives the importable Go client
// (clients/go/client.Client) against the real binary: one user on GET /ws, one on the frame
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

// TestMetricsOfWebSocketAndCrossNodePushes: two nodes of one tenant; a WebSocket sender on the
// first, a member on each node. ws_connections counts the browser-side connection and
// ws_refused_total an upgrade without the imd.v1 subprotocol; whichever node's consumer
// takes the job forwards the push for the member on the other node, so the forwards and
// the receiving node's lag move on one of them.
func TestMetricsOfWebSocketAndCrossNodePushes(t *testing.T) {
	first := Start(t, Options{})
	second := Start(t, Options{Tenant: first.Tenant, Env: map[string]string{"IMD_NODE_ID": "2"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodes := []*Server{first, second}
	sum := func(s series) float64 {
		total := 0.0
		for _, n := range nodes {
			total += n.metricValue(s.name, s.labels...)
		}
		return total
	}
	const sender, near, far = 411, 412, 413
	senderToken, nearToken, farToken := first.User(sender), first.User(near), first.User(far)
	topic := first.Group(41, sender, near, far)

	refusedBefore := first.metricValue("ws_refused_total")
	resp, err := http.Get("http://" + first.HTTPAddr + "/ws") // no upgrade, no subprotocol
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	eventually(t, 30*time.Second, "ws_refused_total rises", func() bool {
		return first.metricValue("ws_refused_total") > refusedBefore
	})

	ws, err := client.Dial(ctx, client.Options{Addr: "ws://" + first.HTTPAddr + "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.Auth(ctx, senderToken, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "ws_connections is 1", func() bool { return first.metricValue("ws_connections") == 1 })

	recipients := []*client.Conn{first.Connect(ctx, nearToken, 1), second.Connect(ctx, farToken, 1)}
	forwarded, lag := metric("cross_node_push_total", "result", "forwarded"), count("cross_node_push_lag_seconds")
	forwardedBefore, lagBefore := sum(forwarded), sum(lag)
	ack, err := ws.Send(ctx, textMessage(topic, "cross-1", "hello both nodes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range recipients {
		if p, ok := transportNextPush(t, c, 30*time.Second); !ok || p.Message == nil || p.Message.Seq != ack.Seq {
			t.Fatalf("push %+v, want seq %d", p, ack.Seq)
		}
	}
	eventually(t, 30*time.Second, "cross_node_push_total{forwarded} rises", func() bool { return sum(forwarded) > forwardedBefore })
	eventually(t, 30*time.Second, "cross_node_push_lag_seconds observed", func() bool { return sum(lag) > lagBefore })
}
