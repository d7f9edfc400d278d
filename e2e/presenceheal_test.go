package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// TestPresenceHealsAfterRedisLoss (issue 31, DESIGN §13): Redis loses the node registry while
// users stay connected on two nodes. Each node claims its devices again when its lease renewal
// finds the lease gone, so within a lease they read online again and cross-node pushes reach
// them; a user who left during the loss reads offline.
func TestPresenceHealsAfterRedisLoss(t *testing.T) {
	const lease = 3 * time.Second
	nodes := startNodes(t, 2, map[string]string{"IMD_CLUSTER_LEASE_TTL": lease.String()})
	one, two := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
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

	// Both nodes answer alice and bob online again within a lease; carol, gone, is offline.
	want := []string{wire.PresenceOnline, wire.PresenceOnline, wire.PresenceOffline}
	for _, asker := range []*client.Conn{a, b} {
		for got := states(query(asker)); !slices.Equal(got, want); got = states(query(asker)) {
			if time.Since(lost) > lease {
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
