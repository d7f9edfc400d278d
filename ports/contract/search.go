package contract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// SearchFixture is an empty tenant: its message store, shard store and search over one database.
type SearchFixture struct {
	Tenant string
	Store  ports.MessageStore
	Shards ports.ShardStore
	Search ports.MessageSearch
}

// Search checks ports.MessageSearch (seed 000 §6.6): one month table, a created_at range with
// an inclusive start and exclusive end, an optional topic, the text as a literal substring
// (LIKE wildcards in it match only themselves), normal messages only, newest first.
func Search(t *testing.T, fresh func(t *testing.T) SearchFixture) {
	f := fresh(t)
	ctx := context.Background()
	writable(t, f.Shards, f.Tenant, monthA)
	writable(t, f.Shards, f.Tenant, monthB)
	// grp_1 seqs 1-4 and grp_2 seqs 1-2 in monthA, a minute apart by seq; grp_1 5-6 in monthB.
	texts := map[int64]string{1: "hello", 2: "100% sure", 3: "a_b", 4: "say hello!", 11: "hello there", 12: "1000 axb things"}
	for sq := int64(1); sq <= 4; sq++ {
		m := newMessage("grp_1", sq, sq, monthA)
		m.Content = json.RawMessage(fmt.Sprintf(`{"text":%q}`, texts[sq]))
		mustAppend(t, f.Store, f.Tenant, m, ports.Stored)
	}
	for sq := int64(1); sq <= 2; sq++ {
		m := newMessage("grp_2", sq, 10+sq, monthA)
		m.Content = json.RawMessage(fmt.Sprintf(`{"text":%q}`, texts[10+sq]))
		mustAppend(t, f.Store, f.Tenant, m, ports.Stored)
	}
	for sq := int64(5); sq <= 6; sq++ {
		mustAppend(t, f.Store, f.Tenant, newMessage("grp_1", sq, sq, monthB), ports.Stored)
	}
	// A second attempt of msg 1 with a new seq is closed by a tombstone, never a search hit.
	dup := newMessage("grp_1", 7, 99, monthB)
	dup.ClientMsgID = newMessage("grp_1", 1, 1, monthA).ClientMsgID
	mustAppend(t, f.Store, f.Tenant, dup, ports.DuplicateClientMsgID)

	minute := func(n int) time.Time { return monthA.Start().Add(time.Duration(n) * time.Minute) }
	cases := []struct {
		name string
		q    ports.SearchQuery
		want []int64 // msg_ids in order
	}{
		{"whole month, newest first, ties by seq then msg_id", ports.SearchQuery{From: monthA.Start(), To: monthA.End()}, []int64{4, 3, 12, 2, 11, 1}},
		{"from inclusive, to exclusive", ports.SearchQuery{From: minute(2).Add(123 * time.Millisecond), To: minute(4).Add(123 * time.Millisecond)}, []int64{3, 12, 2}},
		{"one topic", ports.SearchQuery{Topic: "grp_2", From: monthA.Start(), To: monthA.End()}, []int64{12, 11}},
		{"text", ports.SearchQuery{Text: "hello", From: monthA.Start(), To: monthA.End()}, []int64{4, 11, 1}},
		{"topic and text", ports.SearchQuery{Topic: "grp_1", Text: "hello", From: monthA.Start(), To: monthA.End()}, []int64{4, 1}},
		{"percent is literal", ports.SearchQuery{Text: "100%", From: monthA.Start(), To: monthA.End()}, []int64{2}},
		{"underscore is literal", ports.SearchQuery{Text: "a_b", From: monthA.Start(), To: monthA.End()}, []int64{3}},
		{"escape character is literal", ports.SearchQuery{Text: "hello!", From: monthA.Start(), To: monthA.End()}, []int64{4}},
		{"limit", ports.SearchQuery{From: monthA.Start(), To: monthA.End(), Limit: 2}, []int64{4, 3}},
		{"range outside the month's rows", ports.SearchQuery{From: monthB.Start(), To: monthB.End()}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.q.Limit == 0 {
				tc.q.Limit = 50
			}
			got, err := f.Search.Search(ctx, f.Tenant, monthA, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]int64, len(got))
			for i, m := range got {
				ids[i] = m.MsgID
			}
			if fmt.Sprint(ids) != fmt.Sprint(append([]int64{}, tc.want...)) {
				t.Fatalf("msg_ids = %v, want %v", ids, tc.want)
			}
		})
	}
	t.Run("messages come back whole, tombstones never", func(t *testing.T) {
		got, err := f.Search.Search(ctx, f.Tenant, monthB, ports.SearchQuery{Topic: "grp_1", From: monthB.Start(), To: monthB.End(), Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		wantSeqs(t, got, 6, 5)
		sameMessage(t, got[1], newMessage("grp_1", 5, 5, monthB))
		if got[0].Status != message.StatusNormal {
			t.Fatalf("status %s", got[0].Status)
		}
	})
	t.Run("month missing from the catalog", func(t *testing.T) {
		_, err := f.Search.Search(ctx, f.Tenant, monthB.Next(), ports.SearchQuery{From: monthA.Start(), To: monthB.End(), Limit: 5})
		if !errors.Is(err, shard.ErrMonthMissing) {
			t.Fatalf("err = %v, want shard.ErrMonthMissing", err)
		}
	})
}
