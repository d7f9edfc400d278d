package contract

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/fulltext"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// SearchIndex runs the search index contract: Chinese and English text, topic and time
// filters, newest-first order with offsets, replacement, removal and month purges.
func SearchIndex(t *testing.T, newIndex func(t *testing.T) ports.SearchIndex) {
	ctx := context.Background()
	x := newIndex(t)
	const tenant = "t1"
	base := time.Date(2031, 1, 10, 0, 0, 0, 0, time.UTC)
	docs := []fulltext.Doc{
		{Topic: "grp_1", Seq: 1, Month: 203101, Text: "我们明天讨论归档方案", CreatedAt: base},
		{Topic: "grp_1", Seq: 2, Month: 203101, Text: "The archive plan is ready", CreatedAt: base.Add(time.Minute)},
		{Topic: "grp_2", Seq: 1, Month: 203101, Text: "归档 and retention, ARCHIVE again", CreatedAt: base.Add(2 * time.Minute)},
		{Topic: "grp_2", Seq: 2, Month: 203102, Text: "月表归档完成", CreatedAt: base.AddDate(0, 1, 0)},
		{Topic: "p2p_1_2", Seq: 9, Month: 203102, Text: "lunch?", CreatedAt: base.AddDate(0, 1, 1)},
		// Same millisecond: the seq breaks the tie as a number (10 after 9), not as text.
		{Topic: "grp_3", Seq: 9, Month: 203103, Text: "tiebreak nine", CreatedAt: base.AddDate(0, 2, 0)},
		{Topic: "grp_3", Seq: 10, Month: 203103, Text: "tiebreak ten", CreatedAt: base.AddDate(0, 2, 0)},
	}
	if err := x.Index(ctx, tenant, docs); err != nil {
		t.Fatalf("Index: %v", err)
	}
	if err := x.Index(ctx, "t2", []fulltext.Doc{{Topic: "grp_1", Seq: 5, Month: 203101, Text: "archive of another tenant", CreatedAt: base}}); err != nil {
		t.Fatal(err)
	}
	search := func(q fulltext.Query) []string {
		t.Helper()
		if q.Limit == 0 {
			q.Limit = 10
		}
		hits, err := x.Search(ctx, tenant, q)
		if err != nil {
			t.Fatalf("Search %+v: %v", q, err)
		}
		out := make([]string, len(hits))
		for i, h := range hits {
			out[i] = fmt.Sprintf("%s/%d", h.Topic, h.Seq)
		}
		return out
	}
	tests := []struct {
		name string
		q    fulltext.Query
		want []string
	}{
		{"Chinese word, newest first", fulltext.Query{Text: "归档"}, []string{"grp_2/2", "grp_2/1", "grp_1/1"}},
		{"Chinese phrase needs all its bigrams", fulltext.Query{Text: "归档方案"}, []string{"grp_1/1"}},
		{"English any case", fulltext.Query{Text: "Archive"}, []string{"grp_2/1", "grp_1/2"}},
		{"every word must match", fulltext.Query{Text: "archive plan"}, []string{"grp_1/2"}},
		{"only the given topics", fulltext.Query{Text: "归档", Topics: []string{"grp_1", "p2p_1_2"}}, []string{"grp_1/1"}},
		{"no topics, no hits", fulltext.Query{Text: "归档", Topics: []string{}}, []string{}},
		{"time range", fulltext.Query{Text: "归档", From: base.Add(time.Minute), To: base.AddDate(0, 1, 0)}, []string{"grp_2/1"}},
		{"offset and limit", fulltext.Query{Text: "归档", Offset: 1, Limit: 1}, []string{"grp_2/1"}},
		{"nothing matches", fulltext.Query{Text: "budget"}, []string{}},
		{"same time, higher seq first", fulltext.Query{Text: "tiebreak"}, []string{"grp_3/10", "grp_3/9"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := search(tc.q); !slices.Equal(got, tc.want) {
				t.Fatalf("Search %q = %v, want %v", tc.q.Text, got, tc.want)
			}
		})
	}
	t.Run("index again replaces, remove and purge delete", func(t *testing.T) {
		if err := x.Index(ctx, tenant, []fulltext.Doc{{Topic: "grp_1", Seq: 2, Month: 203101, Text: "edited: budget", CreatedAt: base.Add(time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		if got := search(fulltext.Query{Text: "archive"}); !slices.Equal(got, []string{"grp_2/1"}) {
			t.Fatalf("after replacing grp_1/2: %v", got)
		}
		if err := x.Remove(ctx, tenant, []fulltext.Key{{Topic: "grp_2", Seq: 1}, {Topic: "grp_9", Seq: 1}}); err != nil {
			t.Fatal(err)
		}
		if got := search(fulltext.Query{Text: "归档"}); !slices.Equal(got, []string{"grp_2/2", "grp_1/1"}) {
			t.Fatalf("after Remove: %v", got)
		}
		n, err := x.RemoveMonth(ctx, tenant, month.Month(203101))
		if err != nil || n != 2 {
			t.Fatalf("RemoveMonth = %d, %v; want 2", n, err)
		}
		if got := search(fulltext.Query{Text: "归档"}); !slices.Equal(got, []string{"grp_2/2"}) {
			t.Fatalf("after RemoveMonth: %v", got)
		}
		other, err := x.Search(ctx, "t2", fulltext.Query{Text: "archive", Limit: 10})
		if err != nil || len(other) != 1 {
			t.Fatalf("the other tenant's index: %v %v", other, err)
		}
	})
}
