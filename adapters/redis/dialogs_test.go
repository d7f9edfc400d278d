package redis

import (
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/ports/contract"
)

func TestDialogStoreContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.DialogStore(t, func(t *testing.T) contract.DialogFixture {
			return contract.DialogFixture{Tenant: testTenant(t, c), Dialogs: NewDialogStore(c)}
		})
	})
}

func TestListGapsContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.ListGaps(t, func(t *testing.T) contract.ListGapsFixture {
			return contract.ListGapsFixture{Tenant: testTenant(t, c), Gaps: NewDialogStore(c)}
		})
	})
}

// The batch markers of a message expire with the job's done marker (dialog.Update.OnceTTL):
// they are written once per call, after the batches acted, and must not be left without a TTL.
func TestDialogMarkersExpire(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		tenant := testTenant(t, c)
		s := NewDialogStore(c)
		u := dialog.Update{ConversationID: 42, Score: 1000, Sender: 1, Once: "job-7", OnceTTL: time.Minute,
			Preview: dialog.Preview{ConversationID: 42, Seq: 1, Type: "text", Text: "hi", From: 1, CreatedAt: 1000},
			Batches: []dialog.Batch{{Index: 2, Users: []int64{2}}, {Index: 3, Users: []int64{3}}}}
		if _, err := s.Apply(t.Context(), tenant, u); err != nil {
			t.Fatal(err)
		}
		k, err := KeysOf(tenant)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		for _, g := range []int{2, 3} { // each batch's users are in their slot group, with its marker
			marker := k.DeliverLists(u.Once, g, g)
			if n, err := c.Do(ctx, c.B().Exists().Key(marker).Build()).AsInt64(); err != nil || n != 1 {
				t.Fatalf("marker of batch %d: %d, %v; want it set", g, n, err)
			}
			ttl, err := c.Do(ctx, c.B().Pttl().Key(marker).Build()).AsInt64()
			if err != nil || ttl <= 0 || ttl > time.Minute.Milliseconds() {
				t.Fatalf("marker TTL %d ms, %v: want one within a minute", ttl, err)
			}
		}
	})
}

// TestDialogCallsPerNode: a pass's list changes go in one script call per slot group its
// recipients live in on a cluster, and in one call on one node, where the groups share one
// main thread (issue 30 part 2); either way each recipient counts the message once.
func TestDialogCallsPerNode(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		tenant := testTenant(t, c)
		counter := &scriptCounter{Client: c}
		s := NewDialogStore(counter)
		users := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10} // ten slot groups
		u := dialog.Update{ConversationID: 42, Score: 1000, Sender: 99, Once: "job-7", OnceTTL: time.Minute,
			Preview: dialog.Preview{ConversationID: 42, Seq: 1, Type: "text", Text: "hi", From: 99, CreatedAt: 1000},
			Batches: dialog.BatchesOf(users)}
		if _, err := s.Apply(t.Context(), tenant, u); err != nil {
			t.Fatal(err)
		}
		// On a cluster the preview's group is one of the ten or one more.
		low, high := int64(len(users)), int64(len(users)+1)
		if c.Mode() != rueidis.ClientModeCluster {
			low, high = 1, 1
		}
		if got := counter.scripts.Load(); got < low || got > high {
			t.Errorf("%d script calls; want %d to %d", got, low, high)
		}
		k, _ := KeysOf(tenant)
		for _, user := range users {
			n, err := c.Do(t.Context(), c.B().Hget().Key(k.DialogUnreadCount(user)).Field("42").Build()).ToString()
			if err != nil || n != "1" {
				t.Errorf("user %d's unread count: %q, %v; want 1", user, n, err)
			}
		}
	})
}
