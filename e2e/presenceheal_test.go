package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// TestPresenceHealsAfterRedisLoss (issue 31, DESIGN §13): Redis loses the node registry while
// users stay connected on two nodes. Each node claims its devices again when its lease renewal
// finds the lease gone, so within two leases (the heal waits a lease after the last node that
// found the loss, DESIGN §13 "Unknown until healed") they read online again and cross-node
// pushes reach them; a user who left during the loss reads offline.
func TestPresenceHealsAfterRedisLoss(t *testing.T) {
	const lease = 3 * time.Second
	one, two, ctx := leasedPair(t, lease)
	const alice, bob, carol = 320, 321, 322
	ta, tb, tc := one.User(alice), one.User(bob), one.User(carol)
	topic := one.Group(32, alice, bob, carol)
	a := one.Connect(ctx, ta, 1)
	b := two.Connect(ctx, tb, 1)
	c := two.Connect(ctx, tc, 1)
	query := func(from *client.Conn) []wire.Presence {
		t.Helper()
		got, err := from.QueryPresence(ctx, alice, bob, carol)
		if err != nil || len(got) != 3 {
			t.Fatalf("query presence: %+v, %v", got, err)
		}
		return got
	}
	states := func(got []wire.Presence) []string {
		return []string{got[0].State, got[1].State, got[2].State}
	}
	allOn := []string{wire.PresenceOnline, wire.PresenceOnline, wire.PresenceOnline}
	if got := states(query(a)); !slices.Equal(got, allOn) {
		t.Fatalf("before the loss: %v", got)
	}

	one.dropTenantKeys(one.Redis())
	lost := time.Now()
	if err := c.Close(); err != nil && err != client.ErrClosed {
		t.Fatal(err)
	}

	// Both nodes answer alice and bob online again within two leases; carol, gone, is offline.
	want := []string{wire.PresenceOnline, wire.PresenceOnline, wire.PresenceOffline}
	for _, asker := range []*client.Conn{a, b} {
		for got := states(query(asker)); !slices.Equal(got, want); got = states(query(asker)) {
			if time.Since(lost) > 2*lease {
				t.Fatalf("%v after the loss: %v, want %v", time.Since(lost).Round(time.Millisecond), got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("presence healed %v after the loss (lease %v)", time.Since(lost).Round(time.Millisecond), lease)

	// A message from node 1 reaches bob on node 2, and one from node 2 reaches alice on node 1.
	ack, _ := sendUntilAcked(t, ctx, a, textMessage(topic, "healed-a", "to bob"), 20*time.Second)
	one2 := func(p pushLog) bool { return slices.Contains(p.seqs, ack.Seq) }
	if got := collectPushes(t, b, 20*time.Second, one2).seqs; !slices.Contains(got, ack.Seq) {
		t.Fatalf("bob on node 2 got %v, want seq %d", got, ack.Seq)
	}
	back, _ := sendUntilAcked(t, ctx, b, textMessage(topic, "healed-b", "to alice"), 20*time.Second)
	two1 := func(p pushLog) bool { return slices.Contains(p.seqs, back.Seq) }
	if got := collectPushes(t, a, 20*time.Second, two1).seqs; !slices.Contains(got, back.Seq) {
		t.Fatalf("alice on node 1 got %v, want seq %d", got, back.Seq)
	}
}

// TestPresenceUnknownUntilTheRegistryHeals (issue 31 "Redis loss degrades to unknown and
// heals", DESIGN §13 "Unknown until healed"): Redis loses the registry while alice (node 1)
// and carol (node 2) are online and bob, their friend, watches from node 2; carol leaves
// during the loss. Until every node claimed its devices again and a lease passed, both nodes
// answer unknown — never alice offline, never carol online — and once it heals bob is pushed
// alice online (node 1's heal) and carol offline with her last_seen (node 2's).
func TestPresenceUnknownUntilTheRegistryHeals(t *testing.T) {
	const lease = 3 * time.Second
	one, two, ctx := leasedPair(t, lease)
	const alice, bob, carol = 330, 331, 332
	ta, tb, tc := one.User(alice), one.User(bob), one.User(carol)
	one.MustAdmin("POST", "/friendships", map[string]any{"user_a": alice, "user_b": bob}, nil)
	one.MustAdmin("POST", "/friendships", map[string]any{"user_a": carol, "user_b": bob}, nil)
	watcher := two.ConnectLive(ctx, tb, 1)
	a := one.Connect(ctx, ta, 1)
	c := two.Connect(ctx, tc, 1)
	// Carol's push is local to bob's node and may come before alice's: wait for both at once.
	for online := map[int64]bool{}; len(online) < 2; {
		p := awaitData(t, watcher, wire.CmdPresence, 15*time.Second, func(p wire.Presence) bool {
			return (p.UserID == alice || p.UserID == carol) && p.State == wire.PresenceOnline
		})
		online[p.UserID] = true
	}
	unknownBefore := one.metricValue("presence_unknown_total") + two.metricValue("presence_unknown_total")
	healedBefore := one.metricValue("presence_heal_pushes_total", "result", "pushed") + two.metricValue("presence_heal_pushes_total", "result", "pushed")

	one.dropTenantKeys(one.Redis())
	lost := time.Now()
	if err := c.Close(); err != nil && err != client.ErrClosed {
		t.Fatal(err)
	}

	// Every answer until the heal is unknown or the truth, from either node.
	unknown := 0
	for _, asker := range []*client.Conn{a, watcher} {
		for {
			got, err := asker.QueryPresence(ctx, alice, carol)
			if err != nil || len(got) != 2 {
				t.Fatalf("query presence: %+v, %v", got, err)
			}
			if got[0].State == wire.PresenceOffline || got[1].State == wire.PresenceOnline {
				t.Fatalf("%v after the loss: %+v; alice is online and carol left", time.Since(lost).Round(time.Millisecond), got)
			}
			if got[0].State == wire.PresenceUnknown || got[1].State == wire.PresenceUnknown {
				unknown++
			} else if got[0].State == wire.PresenceOnline && got[1].State == wire.PresenceOffline && got[1].LastSeen > 0 {
				break
			}
			if time.Since(lost) > 3*lease {
				t.Fatalf("not healed %v after the loss: %+v", time.Since(lost).Round(time.Millisecond), got)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("healed %v after the loss (lease %v), %d answers unknown", time.Since(lost).Round(time.Millisecond), lease, unknown)
	if unknown == 0 {
		t.Fatal("no answer was unknown while the registry healed")
	}

	// The heal pushes bob what it established.
	seen := map[int64]wire.Presence{}
	for len(seen) < 2 {
		p := awaitData(t, watcher, wire.CmdPresence, 15*time.Second, func(p wire.Presence) bool {
			return p.UserID == alice && p.State == wire.PresenceOnline || p.UserID == carol && p.State == wire.PresenceOffline
		})
		seen[p.UserID] = p
	}
	if seen[carol].LastSeen <= 0 {
		t.Fatalf("carol's offline push after the heal has no last_seen: %+v", seen[carol])
	}
	if got := one.metricValue("presence_unknown_total") + two.metricValue("presence_unknown_total"); got <= unknownBefore {
		t.Errorf("presence_unknown_total %v → %v", unknownBefore, got)
	}
	// Node 1 pushed alice, node 2 carol and bob (to his friends): each counts once it is handed over.
	healed := func() float64 {
		return one.metricValue("presence_heal_pushes_total", "result", "pushed") + two.metricValue("presence_heal_pushes_total", "result", "pushed")
	}
	for deadline := time.Now().Add(10 * time.Second); healed() < healedBefore+3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("presence_heal_pushes_total{result=pushed} %v → %v; want 3 more", healedBefore, healed())
		}
	}
}
