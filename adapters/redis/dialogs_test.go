package redis

import (
	"strings"
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

// A batch's marks expire with the job's done marker (dialog.Update.OnceTTL): they are written
// once per call, after the batches acted, and must not be left without a TTL.
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
			marker := k.DeliverListSeqs(u.ConversationID, g, g)
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

// TestDialogMarksAreSeqRanges: a batch's marks are its conversation's applied seqs as ranges
// (applyListsScript): any order of seqs acts once each, a gap filled merges its neighbours,
// past maxMarkRanges the oldest range is forgotten, and a write never shortens the life an
// earlier one gave the marks.
func TestDialogMarksAreSeqRanges(t *testing.T) {
	odd := func(n int) []int64 {
		var out []int64
		for i := range n {
			out = append(out, int64(2*i+1))
		}
		return out
	}
	cases := []struct {
		name      string
		seqs      []int64 // applied one call each, with a minute's ttl
		again     []int64 // applied after, each answering first as want says
		want      []bool
		wantValue string // the ranges the marks keep, after again
	}{
		{"in order, then repeats", []int64{1, 2, 3}, []int64{2, 3, 4}, []bool{false, false, true}, "1-4"},
		{"out of order, a gap filled", []int64{1, 5, 3}, []int64{2, 4, 3}, []bool{true, true, false}, "1-5"},
		{"past the bound the oldest range goes", odd(maxMarkRanges + 2), []int64{1, 5, 3}, []bool{true, false, true}, ""},
	}
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		s := NewDialogStore(c)
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tenant := testTenant(t, c)
				conv := int64(100 + i)
				applySeq := func(seq int64, ttl time.Duration) bool {
					t.Helper()
					u := dialog.Update{ConversationID: conv, Score: 1000 * seq, Sender: 1, Once: "m" + itoa(seq), OnceTTL: ttl,
						Preview: dialog.Preview{ConversationID: conv, Seq: seq, From: 1, CreatedAt: 1000 * seq},
						Batches: []dialog.Batch{{Index: 2, Users: []int64{2}}}}
					got, err := s.Apply(t.Context(), tenant, u)
					if err != nil || len(got) != 1 {
						t.Fatalf("apply seq %d: %v, %v", seq, got, err)
					}
					return got[0].First
				}
				for _, seq := range tc.seqs {
					if !applySeq(seq, time.Minute) {
						t.Fatalf("seq %d: not first the first time", seq)
					}
				}
				for j, seq := range tc.again {
					if got := applySeq(seq, time.Minute); got != tc.want[j] {
						t.Errorf("seq %d again: first %v, want %v", seq, got, tc.want[j])
					}
				}
				k, _ := KeysOf(tenant)
				raw, err := c.Do(t.Context(), c.B().Get().Key(k.DeliverListSeqs(conv, 2, 2)).Build()).ToString()
				if err != nil {
					t.Fatal(err)
				}
				_, ranges, _ := strings.Cut(raw, "|")
				if n := strings.Count(ranges, ",") + 1; n > maxMarkRanges {
					t.Errorf("%d ranges kept: %q", n, ranges)
				}
				if tc.wantValue != "" && ranges != tc.wantValue {
					t.Errorf("ranges %q, want %q", ranges, tc.wantValue)
				}
				// A longer-lived write, then a shorter one: the marks live as long as the longer.
				applySeq(1000, time.Hour)
				applySeq(1001, time.Minute)
				ttl, err := c.Do(t.Context(), c.B().Pttl().Key(k.DeliverListSeqs(conv, 2, 2)).Build()).AsInt64()
				if err != nil || ttl <= time.Minute.Milliseconds() || ttl > time.Hour.Milliseconds() {
					t.Errorf("marks TTL %d ms, %v: want the hour's", ttl, err)
				}
			})
		}
	})
}
