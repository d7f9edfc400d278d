package memory

import (
	"context"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/ports/contract"
)

func TestHotCacheContract(t *testing.T) {
	contract.HotCache(t, func(_ *testing.T, window time.Duration, maxPerTopic int) contract.HotFixture {
		hot := NewHotCache(time.Now, window, maxPerTopic)
		return contract.HotFixture{Tenant: contractTenant, Cache: hot, FollowUp: &CommitFollowUp{Hot: hot}}
	})
}

func TestRouteFillContract(t *testing.T) {
	contract.RouteFill(t, func(*testing.T) contract.RouteFillFixture {
		return contract.RouteFillFixture{Tenant: contractTenant, Routes: NewRouteCache()}
	})
}

func TestHiddenRangesContract(t *testing.T) {
	contract.HiddenRanges(t, func(*testing.T) contract.HiddenFixture {
		l := NewDeleteLog(NewShardStore())
		return contract.HiddenFixture{Tenant: contractTenant, Log: l, Ranges: l}
	})
}

func TestSearchContract(t *testing.T) {
	contract.Search(t, func(*testing.T) contract.SearchFixture {
		shards := NewShardStore()
		s := NewMessageStore(shards)
		return contract.SearchFixture{Tenant: contractTenant, Store: s, Shards: shards, Search: s}
	})
}

// TestHotCacheExpires: an idle topic disappears a window after its last write, like the TTL
// the Redis adapter sets.
func TestHotCacheExpires(t *testing.T) {
	clock := NewClock(time.Date(2031, 6, 1, 0, 0, 0, 0, time.UTC))
	h := NewHotCache(clock.Now, time.Hour, 10)
	ctx := context.Background()
	m := message.Message{Topic: "grp_1", Seq: 1, MsgID: 1, Status: message.StatusNormal, CreatedAt: clock.Now()}
	if err := h.Put(ctx, contractTenant, m); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after time.Duration
		want  int
	}{{59 * time.Minute, 1}, {time.Minute, 0}} {
		clock.Advance(tc.after)
		got, err := h.After(ctx, contractTenant, "grp_1", 0, 10)
		if err != nil || len(got) != tc.want {
			t.Fatalf("after %v more: %d entries (%v), want %d", tc.after, len(got), err, tc.want)
		}
	}
}
