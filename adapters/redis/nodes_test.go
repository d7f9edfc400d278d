package redis

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/core/delivery"
	"github.com/imdhq/imd/core/presence"
)

func TestNodeKeysLayout(t *testing.T) {
	k, err := KeysOf("acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want string }{
		{k.Nodes(), "im:{acme}:nodes"},
		{k.Presence(7), "im:{acme}:presence:7"},
		{k.NodeDevices("3-ab"), "im:{acme}:node:3-ab:devices"},
		{k.NodeChannel("3-ab"), "im:{acme}:node:3-ab:push"},
		{k.DeliverLease(2, 16), "im:{acme}:deliver:lease:16:2"},
	} {
		if c.got != c.want {
			t.Errorf("key %q; want %q", c.got, c.want)
		}
		if open, end := strings.IndexByte(c.got, '{'), strings.IndexByte(c.got, '}'); c.got[open+1:end] != "acme" {
			t.Errorf("key %q leaves the tenant's slot", c.got)
		}
	}
}

func TestNodeLeasesRenewAndRetire(t *testing.T) {
	c := testClient(t)
	tenant, ctx := testTenant(t, c), t.Context()
	n := NewNodes(c)
	if _, _, err := n.Renew(ctx, tenant, "1-aa", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Renew(ctx, tenant, "2-bb", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Claim(ctx, tenant, presence.Entry{User: 5, Device: 1, Node: "2-bb", Token: 1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	live, expired, err := n.Renew(ctx, tenant, "1-aa", time.Second)
	if err != nil || !slices.Equal(live, []string{"1-aa"}) || !slices.Equal(expired, []string{"2-bb"}) {
		t.Fatalf("live %v expired %v err %v", live, expired, err)
	}
	if _, err := n.Send(ctx, tenant, "2-bb", 10, []byte("x")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // twice: idempotent
		if err := n.Retire(ctx, tenant, "2-bb"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := n.Lookup(ctx, tenant, []int64{5}); len(got) != 0 {
		t.Fatalf("a retired node's presence is left: %+v", got)
	}
	k, _ := KeysOf(tenant)
	if n, _ := c.Do(ctx, c.B().Exists().Key(k.NodeChannel("2-bb"), k.NodeDevices("2-bb")).Build()).AsInt64(); n != 0 {
		t.Fatalf("%d keys of the retired node left", n)
	}
	if live, expired, _ := n.Renew(ctx, tenant, "1-aa", time.Second); len(live) != 1 || len(expired) != 0 {
		t.Fatalf("after retire: live %v expired %v", live, expired)
	}
	if _, _, err := n.Renew(ctx, tenant, "bad{node}", time.Second); err == nil {
		t.Fatal("a node name with a brace was accepted")
	}
}

func TestPresenceClaimReleaseLookup(t *testing.T) {
	c := testClient(t)
	tenant, ctx := testTenant(t, c), t.Context()
	n := NewNodes(c)
	first := presence.Entry{User: 9, Device: 1, Node: "1-aa", Token: 4}
	if _, found, err := n.Claim(ctx, tenant, first); err != nil || found {
		t.Fatalf("first claim: found %v err %v", found, err)
	}
	second := presence.Entry{User: 9, Device: 1, Node: "2-bb", Token: 1}
	prev, found, err := n.Claim(ctx, tenant, second)
	if err != nil || !found || prev != first {
		t.Fatalf("second claim replaced %+v (found %v, err %v), want %+v", prev, found, err, first)
	}
	// The older connection's release leaves the newer claim.
	if err := n.Release(ctx, tenant, first); err != nil {
		t.Fatal(err)
	}
	other := presence.Entry{User: 9, Device: 2, Node: "1-aa", Token: 5}
	if _, _, err := n.Claim(ctx, tenant, other); err != nil {
		t.Fatal(err)
	}
	// Malformed entries are skipped, never fatal.
	k, _ := KeysOf(tenant)
	for field, value := range map[string]string{"3": "garbage", "x": "1-aa|1", "4": "1-aa|-1", "5": "{x}|1"} {
		if err := c.Do(ctx, c.B().Hset().Key(k.Presence(9)).FieldValue().FieldValue(field, value).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := n.Lookup(ctx, tenant, []int64{9, 10})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b presence.Entry) int { return int(a.Device) - int(b.Device) })
	if !slices.Equal(got, []presence.Entry{second, other}) {
		t.Fatalf("lookup %+v", got)
	}
	if prev, found, err := n.Claim(ctx, tenant, presence.Entry{User: 9, Device: 3, Node: "1-aa", Token: 6}); err != nil || found {
		t.Fatalf("a malformed entry counted as a connection: %+v %v %v", prev, found, err)
	}
}

func TestNodeChannelIsBoundedAndOrdered(t *testing.T) {
	c := testClient(t)
	tenant, ctx := testTenant(t, c), t.Context()
	n := NewNodes(c)
	const limit = 3
	for i := range limit {
		if sent, err := n.Send(ctx, tenant, "1-aa", limit, []byte(fmt.Sprint(i))); err != nil || !sent {
			t.Fatalf("send %d: %v %v", i, sent, err)
		}
	}
	if sent, err := n.Send(ctx, tenant, "1-aa", limit, []byte("over")); err != nil || sent {
		t.Fatalf("a full channel took more: %v %v", sent, err)
	}
	msgs, err := n.Receive(ctx, tenant, "1-aa", "", 10, 10*time.Millisecond)
	if err != nil || len(msgs) != limit {
		t.Fatalf("received %d: %v", len(msgs), err)
	}
	for i, m := range msgs {
		if string(m.Body) != fmt.Sprint(i) {
			t.Fatalf("entry %d is %q", i, m.Body)
		}
	}
	if more, err := n.Receive(ctx, tenant, "1-aa", msgs[len(msgs)-1].ID, 10, 10*time.Millisecond); err != nil || len(more) != 0 {
		t.Fatalf("after the cursor: %v %v", more, err)
	}
	if err := n.Remove(ctx, tenant, "1-aa", msgs[0].ID, msgs[1].ID, msgs[2].ID); err != nil {
		t.Fatal(err)
	}
	if sent, err := n.Send(ctx, tenant, "1-aa", limit, []byte("a"), []byte("b")); err != nil || !sent {
		t.Fatalf("a drained channel refused: %v %v", sent, err)
	}
}

func TestDeliverLeasesRequeueOnTakeover(t *testing.T) {
	c := testClient(t)
	tenant, ctx := testTenant(t, c), t.Context()
	q, err := NewDeliverQueue(c).WithPartitions(2)
	if err != nil {
		t.Fatal(err)
	}
	topic := "grp_1"
	p := delivery.PartitionOf(topic, 2)
	if held, fresh, err := q.Hold(ctx, tenant, p, "1-aa", 100*time.Millisecond); err != nil || !held || !fresh {
		t.Fatalf("first hold: %v %v %v", held, fresh, err)
	}
	for i := range 3 {
		if err := q.Push(ctx, delivery.Job{Tenant: tenant, Kind: delivery.KindRead, MsgID: int64(i + 1), Topic: topic}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := q.Take(ctx, tenant, p, 0); !ok || err != nil {
		t.Fatalf("take: %v %v", ok, err)
	}
	if held, _, _ := q.Hold(ctx, tenant, p, "2-bb", time.Second); held {
		t.Fatal("another node took a held lease")
	}
	if held, fresh, _ := q.Hold(ctx, tenant, p, "1-aa", 100*time.Millisecond); !held || fresh {
		t.Fatalf("renewal: held %v fresh %v", held, fresh)
	}
	time.Sleep(150 * time.Millisecond)
	if held, fresh, err := q.Hold(ctx, tenant, p, "2-bb", time.Second); !held || !fresh || err != nil {
		t.Fatalf("takeover after expiry: %v %v %v", held, fresh, err)
	}
	// The dead owner's taken job is back at the head, before the ones still queued.
	for want := int64(1); want <= 3; want++ {
		job, ok, err := q.Take(ctx, tenant, p, 0)
		if !ok || err != nil || job.MsgID != want {
			t.Fatalf("take after takeover: %+v %v %v, want msg %d", job, ok, err, want)
		}
	}
	// A restart of node 2 (same node_id, new instance) takes over at once.
	if held, fresh, _ := q.Hold(ctx, tenant, p, "2-cc", time.Second); !held || !fresh {
		t.Fatal("a restarted node waited for its own earlier lease")
	}
	if err := q.Release(ctx, tenant, p, "2-bb"); err != nil {
		t.Fatal(err)
	}
	if held, _, _ := q.Hold(ctx, tenant, p, "1-aa", time.Second); held {
		t.Fatal("a release by a former holder freed the lease")
	}
	if err := q.Release(ctx, tenant, p, "2-cc"); err != nil {
		t.Fatal(err)
	}
	if held, _, _ := q.Hold(ctx, tenant, p, "1-aa", time.Second); !held {
		t.Fatal("a released lease stayed taken")
	}
}
