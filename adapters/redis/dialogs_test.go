package redis

import (
	"strconv"
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
// once per call, after the batches acted, and must not be left without a TTL. On a cluster each
// batch's users are in their slot group, with its marks; on one node one HASH of the
// conversation's group holds every batch's.
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
		marks := map[int]string{2: k.DeliverListMarks(42, 2), 3: k.DeliverListMarks(42, 3)}
		if c.Mode() != rueidis.ClientModeCluster {
			marks = map[int]string{2: k.DeliverListMarks(42, ConversationGroup(42)), 3: k.DeliverListMarks(42, ConversationGroup(42))}
		}
		ctx := t.Context()
		for b, key := range marks {
			v, err := c.Do(ctx, c.B().Hget().Key(key).Field(strconv.Itoa(b)+":"+strconv.Itoa(b)).Build()).ToString()
			if err != nil || v != "1-1" {
				t.Fatalf("marks of batch %d in %s: %q, %v; want 1-1", b, key, v, err)
			}
			ttl, err := c.Do(ctx, c.B().Pttl().Key(key).Build()).AsInt64()
			if err != nil || ttl < time.Minute.Milliseconds()-5000 || ttl > 2*time.Minute.Milliseconds() {
				t.Fatalf("marks TTL %d ms, %v: want one of a minute to two", ttl, err)
			}
		}
	})
}

// TestDialogOldMarksCount: a batch whose marks the code before kept (a STRING per batch,
// Keys.DeliverListSeqs) is read by them until it has a field of its own, so a job applied
// before a rolling upgrade and retried after counts nobody twice; the marks taken in live as
// long as the old ones were to.
func TestDialogOldMarksCount(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		tenant := testTenant(t, c)
		s := NewDialogStore(c)
		k, _ := KeysOf(tenant)
		ctx := t.Context()
		const conv = 42
		until := time.Now().Add(time.Hour).UnixMilli()
		old := k.DeliverListSeqs(conv, 2, 2)
		if err := c.Do(ctx, c.B().Set().Key(old).Value(itoa(until)+"|1-3").Px(time.Hour).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		apply := func(seq int64) bool {
			t.Helper()
			got, err := s.Apply(ctx, tenant, dialog.Update{ConversationID: conv, Score: 1000 * seq, Sender: 1, Once: "m" + itoa(seq), OnceTTL: time.Minute,
				Preview: dialog.Preview{ConversationID: conv, Seq: seq, From: 1, CreatedAt: 1000 * seq},
				Batches: []dialog.Batch{{Index: 2, Users: []int64{2}}, {Index: 3, Users: []int64{3}}}})
			if err != nil || len(got) != 2 {
				t.Fatalf("apply seq %d: %v, %v", seq, got, err)
			}
			if seq <= 3 && got[0].First {
				t.Errorf("seq %d: batch 2 acted again on what the old marks hold", seq)
			}
			return got[1].First
		}
		for _, seq := range []int64{2, 4} {
			if !apply(seq) {
				t.Errorf("seq %d: batch 3, without old marks, did not act", seq)
			}
		}
		if n, err := c.Do(ctx, c.B().Hget().Key(k.DialogUnreadCount(2)).Field(itoa(conv)).Build()).ToString(); err != nil || n != "1" {
			t.Errorf("user 2's count %q, %v: want 1 (seq 4 only)", n, err)
		}
		key := k.DeliverListMarks(conv, 2)
		if c.Mode() != rueidis.ClientModeCluster {
			key = k.DeliverListMarks(conv, ConversationGroup(conv))
		}
		if v, err := c.Do(ctx, c.B().Hget().Key(key).Field("2:2").Build()).ToString(); err != nil || v != "1-4" {
			t.Errorf("batch 2's marks %q, %v: want the old ones and seq 4, 1-4", v, err)
		}
		if ttl, err := c.Do(ctx, c.B().Pttl().Key(key).Build()).AsInt64(); err != nil || ttl <= 50*time.Minute.Milliseconds() {
			t.Errorf("marks TTL %d ms, %v: want the old marks' hour", ttl, err)
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
				key := k.DeliverListMarks(conv, 2)
				if c.Mode() != rueidis.ClientModeCluster {
					key = k.DeliverListMarks(conv, ConversationGroup(conv))
				}
				ranges, err := c.Do(t.Context(), c.B().Hget().Key(key).Field("2:2").Build()).ToString()
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(ranges, ",") + 1; n > maxMarkRanges {
					t.Errorf("%d ranges kept: %q", n, ranges)
				}
				if tc.wantValue != "" && ranges != tc.wantValue {
					t.Errorf("ranges %q, want %q", ranges, tc.wantValue)
				}
				// A longer-lived write, then a shorter one: the marks live as long as the longer.
				applySeq(1000, time.Hour)
				applySeq(1001, time.Minute)
				ttl, err := c.Do(t.Context(), c.B().Pttl().Key(key).Build()).AsInt64()
				if err != nil || ttl <= time.Minute.Milliseconds() || ttl > 2*time.Hour.Milliseconds() {
					t.Errorf("marks TTL %d ms, %v: want the hour's", ttl, err)
				}
			})
		}
	})
}
