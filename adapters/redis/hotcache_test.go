package redis

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestHotCacheContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.HotCache(t, func(t *testing.T, window time.Duration, maxPerTopic int) contract.HotFixture {
			hot := NewHotCache(c, HotCacheOptions{Window: window, MaxPerTopic: maxPerTopic})
			return contract.HotFixture{Tenant: testTenant(t, c), Cache: hot, FollowUp: NewCommitFollowUp(NewDeliverQueue(c), hot)}
		})
	})
}

func TestRouteFillContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.RouteFill(t, func(t *testing.T) contract.RouteFillFixture {
			return contract.RouteFillFixture{Tenant: testTenant(t, c), Routes: NewRouteCache(c)}
		})
	})
}

// TestHotCacheKeyExpires: an idle topic's ZSET lives one window after its last write, and the
// key sits under the tenant's hash tag.
func TestHotCacheKeyExpires(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	h := NewHotCache(c, HotCacheOptions{Window: time.Hour})
	m := message.Message{Topic: "grp_1", Seq: 1, MsgID: 1, Status: message.StatusNormal, CreatedAt: time.Now()}
	if err := NewCommitFollowUp(NewDeliverQueue(c), h).Apply(t.Context(), tenant, ports.FollowUp{Hot: &m}).Hot; err != nil {
		t.Fatal(err)
	}
	k, _ := topicKeys(tenant, "grp_1")
	key := k.HotMessages("grp_1")
	if want := "im:{" + tenant + "~" + strconv.Itoa(TopicGroup("grp_1")) + "}:groupmsg:hot:grp_1"; key != want {
		t.Fatalf("key %q, want %q", key, want)
	}
	if got := pttl(t, c, key); got <= 59*time.Minute || got > time.Hour {
		t.Fatalf("PTTL %v, want about an hour", got)
	}
}
