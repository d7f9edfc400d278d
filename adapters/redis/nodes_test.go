package redis

import (
	"slices"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/ports/contract"
)

func TestNodeKeysLayout(t *testing.T) {
	k, err := KeysOf("acme")
	if err != nil {
		t.Fatal(err)
	}
	channel := "im:{acme~" + strconv.Itoa(TopicGroup("3-ab")) + "}:node:3-ab:push"
	for _, c := range []struct{ got, want string }{
		{k.Nodes(), "im:{acme}:nodes"},
		{k.Presence(7), "im:{acme~7}:presence:7"},
		{k.NodeDevices("3-ab", 7), "im:{acme~7}:node:3-ab:devices"},
		{k.NodeChannel("3-ab"), channel},
		{k.DeliverLease(2, 16), "im:{acme~2}:deliver:lease:16:2"},
	} {
		if c.got != c.want {
			t.Errorf("key %q; want %q", c.got, c.want)
		}
	}
}

func TestNodesContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.Nodes(t, func(t *testing.T) contract.NodesFixture {
			n := NewNodes(c)
			q, err := NewDeliverQueue(c).WithPartitions(2)
			if err != nil {
				t.Fatal(err)
			}
			return contract.NodesFixture{Tenant: testTenant(t, c), Leases: n, Presence: n, Channel: n, Queue: q, Deliver: q, Inspect: n, Holders: q}
		})
	})
}

// TestPresenceSkipsMalformedEntries: what a consumer finds in Redis may be anything; it never
// fails a lookup or counts as a connection.
func TestPresenceSkipsMalformedEntries(t *testing.T) {
	c := testClient(t)
	tenant, ctx := testTenant(t, c), t.Context()
	n := NewNodes(c)
	good := presence.Entry{User: 9, Device: 2, Node: "1-aa", Token: 5}
	if _, _, err := n.Claim(ctx, tenant, good); err != nil {
		t.Fatal(err)
	}
	k, _ := KeysOf(tenant)
	for field, value := range map[string]string{"3": "garbage", "x": "1-aa|1", "4": "1-aa|-1", "5": "{x}|1"} {
		if err := c.Do(ctx, c.B().Hset().Key(k.Presence(9)).FieldValue().FieldValue(field, value).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := n.Lookup(ctx, tenant, []int64{9})
	if err != nil || !slices.Equal(got, []presence.Entry{good}) {
		t.Fatalf("lookup %+v %v", got, err)
	}
	if prev, found, err := n.Claim(ctx, tenant, presence.Entry{User: 9, Device: 3, Node: "1-aa", Token: 6}); err != nil || found {
		t.Fatalf("a malformed entry counted as a connection: %+v %v %v", prev, found, err)
	}
}
