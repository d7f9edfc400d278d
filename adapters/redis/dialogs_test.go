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
