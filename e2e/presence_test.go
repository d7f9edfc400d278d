package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// Presence and typing across two nodes (issue 31, DESIGN §13): a friend's changes and typing
// reach a watcher on the other node, bad input gets its code, and the users of a node killed
// with -9 go offline within its lease.

// awaitData reads c's pushes until one of cmd whose data match accepts, skipping the others.
func awaitData[T any](t *testing.T, c *client.Conn, cmd uint16, limit time.Duration, match func(T) bool) T {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case p, ok := <-c.Pushes():
			if !ok {
				t.Fatalf("connection closed waiting for command %d: %v", cmd, c.Err())
			}
			if p.Command != cmd {
				continue
			}
			var v T
			if err := json.Unmarshal(p.Envelope.Data, &v); err != nil {
				t.Fatalf("push %d %s: %v", cmd, p.Envelope.Data, err)
			}
			if match(v) {
				return v
			}
		case <-deadline:
			var zero T
			t.Fatalf("no push %d matching within %v", cmd, limit)
			return zero
		}
	}
}

// leasedPair starts two nodes whose leases run lease, and a context that ends with the test
// (at most 3 minutes).
func leasedPair(t *testing.T, lease time.Duration) (one, two *Server, ctx context.Context) {
	t.Helper()
	nodes := startNodes(t, 2, map[string]string{"IMD_CLUSTER_LEASE_TTL": lease.String()})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return nodes[0], nodes[1], ctx
}

func TestPresenceAndTypingAcrossNodes(t *testing.T) {
	const lease = 3 * time.Second
	one, two, ctx := leasedPair(t, lease)
	const alice, bob, carol, dave = 310, 311, 312, 313
	ta, tb, tc := one.User(alice), one.User(bob), one.User(carol)
	one.User(dave)
	one.MustAdmin("POST", "/friendships", map[string]any{"user_a": alice, "user_b": bob}, nil)
	group := one.Group(31, alice, bob, carol)

	watcher := two.ConnectLive(ctx, tb, 1)             // bob, on node 2
	plain := two.Connect(ctx, tc, 1)                   // carol, on node 2, subscribed to nothing
	before := two.metricValue("presence_pushes_total") // bob's own arrival: pushed to nobody online

	// Alice comes online on node 1: bob, on node 2, is told.
	a := one.Connect(ctx, ta, 1)
	awaitData(t, watcher, wire.CmdPresence, 15*time.Second, func(p wire.Presence) bool { return p.UserID == alice && p.State == wire.PresenceOnline })
	// Carol is online though she subscribed to nothing: presence is the connection's.
	got, err := watcher.QueryPresence(ctx, alice, carol, dave, alice)
	if err != nil || len(got) != 3 || got[0] != (wire.Presence{UserID: alice, State: wire.PresenceOnline}) ||
		got[1] != (wire.Presence{UserID: carol, State: wire.PresenceOnline}) ||
		got[2].UserID != dave || got[2].State != wire.PresenceOffline {
		t.Fatalf("query %+v, %v; want alice and carol online, dave offline", got, err)
	}

	// The REST form answers the same, on the other node.
	var rest wire.QueryPresenceResponse
	mustCall(t, two, tb, "POST", "/api/v1/presence", wire.QueryPresenceRequest{UserIDs: []int64{alice}}, &rest)
	if len(rest.Presence) != 1 || rest.Presence[0] != (wire.Presence{UserID: alice, State: wire.PresenceOnline}) {
		t.Fatalf("POST /api/v1/presence: %+v", rest)
	}

	// Typing crosses nodes, to the pair and to the group.
	for _, req := range []wire.TypingRequest{{ToUser: bob, Typing: true}, {Topic: group, Typing: true}, {Topic: group}} {
		resp, err := a.Typing(ctx, req)
		if err != nil || (req.Typing && resp.ExpiresIn <= 0) {
			t.Fatalf("typing %+v: %+v, %v", req, resp, err)
		}
		n := awaitData(t, watcher, wire.CmdTypingNotice, 15*time.Second, func(n wire.TypingNotice) bool { return n.UserID == alice })
		if n.Typing != req.Typing || (req.Topic != "" && n.Topic != req.Topic) {
			t.Fatalf("notice %+v for %+v", n, req)
		}
	}

	// Bad input: a clear code, nothing else.
	if _, err := watcher.QueryPresence(ctx, make([]int64, 10_000)...); !isCode(err, wire.CodeInvalidArgument) {
		t.Fatalf("a query of 10,000 ids: %v; want 40001", err)
	}
	if _, err := watcher.Typing(ctx, wire.TypingRequest{Topic: "grp_999999", Typing: true}); !isCode(err, wire.CodeForbidden) {
		t.Fatalf("typing where one is no member: %v; want 40301", err)
	}
	flooded := false
	for range 12 {
		if _, err := a.Typing(ctx, wire.TypingRequest{ToUser: bob, Typing: true}); isCode(err, wire.CodeRateLimited) {
			flooded = true
			break
		} else if err != nil {
			t.Fatalf("typing: %v", err)
		}
	}
	if !flooded {
		t.Fatal("a typing flood was never answered 42901")
	}

	// Alice leaves: offline, with a last_seen from MySQL.
	a.Close()
	off := awaitData(t, watcher, wire.CmdPresence, 15*time.Second, func(p wire.Presence) bool { return p.UserID == alice && p.State == wire.PresenceOffline })
	if off.LastSeen <= 0 {
		t.Fatalf("offline push without last_seen: %+v", off)
	}

	// Hidden: bob sees alice offline without last_seen, even while she is connected.
	a = one.Connect(ctx, ta, 1)
	awaitData(t, watcher, wire.CmdPresence, 15*time.Second, func(p wire.Presence) bool { return p.UserID == alice && p.State == wire.PresenceOnline })
	yes := true
	if s, err := a.Settings(ctx, wire.SettingsRequest{HidePresence: &yes}); err != nil || !s.HidePresence {
		t.Fatalf("hide: %+v, %v", s, err)
	}
	awaitData(t, watcher, wire.CmdPresence, 15*time.Second, func(p wire.Presence) bool { return p.UserID == alice && p.State == wire.PresenceOffline })
	if got, err := watcher.QueryPresence(ctx, alice); err != nil || got[0] != (wire.Presence{UserID: alice, State: wire.PresenceOffline}) {
		t.Fatalf("query of a hidden user: %+v, %v", got, err)
	}
	no := false
	if _, err := a.Settings(ctx, wire.SettingsRequest{HidePresence: &no}); err != nil {
		t.Fatal(err)
	}
	awaitData(t, watcher, wire.CmdPresence, 15*time.Second, func(p wire.Presence) bool { return p.UserID == alice && p.State == wire.PresenceOnline })

	// The metrics of each event moved on the node that saw it (alice's: node 1).
	for _, m := range []struct {
		name   string
		labels []string
	}{
		{"presence_changes_total", []string{"state", "online"}},
		{"presence_changes_total", []string{"state", "offline"}},
		{"typing_total", []string{"result", "accepted"}},
		{"typing_total", []string{"result", "limited"}},
		{"typing_pushes_total", nil},
	} {
		if one.metricValue(m.name, m.labels...) <= 0 {
			t.Errorf("%s%v did not move on node 1", m.name, m.labels)
		}
	}

	// Carol, a member of the group, subscribed to no live push: she got none of them, though
	// alice came and went and typed to the group (a client of the base protocol).
	for {
		select {
		case p := <-plain.Pushes():
			if p.Command == wire.CmdPresence || p.Command == wire.CmdTypingNotice {
				t.Fatalf("an unsubscribed connection got push %d: %s", p.Command, p.Envelope.Data)
			}
			continue
		default:
		}
		break
	}

	// Node 1 dies with alice on it: bob sees her go offline within the lease (and a pass).
	killed := time.Now()
	one.Kill()
	awaitData(t, watcher, wire.CmdPresence, lease+10*time.Second, func(p wire.Presence) bool { return p.UserID == alice && p.State == wire.PresenceOffline })
	took := time.Since(killed)
	t.Logf("a killed node's user went offline after %v (lease %v)", took.Round(time.Millisecond), lease)
	if took > lease+3*time.Second {
		t.Errorf("offline %v after the kill; want within the lease %v and a pass", took, lease)
	}
	if got, err := watcher.QueryPresence(ctx, alice); err != nil || got[0].State != wire.PresenceOffline || got[0].LastSeen <= 0 {
		t.Fatalf("query after the kill: %+v, %v", got, err)
	}
	if two.metricValue("presence_changes_total", "state", "offline") <= 0 {
		t.Error("presence_changes_total{offline} did not move on the node that retired the dead one")
	}
	if after := two.metricValue("presence_pushes_total"); after <= before {
		t.Errorf("presence_pushes_total on node 2: %v → %v", before, after)
	}
}
