package contract

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
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
	t.Run("time ranges at every scale", func(t *testing.T) {
		timeRanges(t, x, tenant)
	})
}

// timeRanges indexes messages around a whole 10^9 ms at distances from milliseconds to weeks and
// checks random ranges from ms-wide to weeks-wide, open on either side, against the documents
// they hold: an index may cut a range into coarser and finer parts, and none may lose or add a
// message at their edges.
func timeRanges(t *testing.T, x ports.SearchIndex, tenant string) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(30, 43))
	const anchor = 1_944_000_000_000 // Unix ms, a whole 10^9
	scales := []int64{1, 10, 1_000, 1_000_000, 1_000_000_000, 3_000_000_000}
	offset := func() int64 {
		s := scales[rnd.IntN(len(scales))]
		return rnd.Int64N(2*s+1) - s
	}
	docs := make([]fulltext.Doc, 400)
	for i := range docs {
		docs[i] = fulltext.Doc{Topic: "rng_1", Seq: int64(i + 1), Month: 203112, Text: "tick", CreatedAt: time.UnixMilli(anchor + offset())}
	}
	if err := x.Index(ctx, tenant, docs); err != nil {
		t.Fatal(err)
	}
	newestFirst := slices.Clone(docs)
	slices.SortFunc(newestFirst, func(a, b fulltext.Doc) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.Seq, a.Seq))
	})
	for range 300 {
		from := docs[rnd.IntN(len(docs))].CreatedAt.Add(time.Duration(rnd.Int64N(3)-1) * time.Millisecond)
		to := from.Add(time.Duration(rnd.Int64N(2*scales[rnd.IntN(len(scales))]+1)) * time.Millisecond)
		switch rnd.IntN(6) {
		case 0:
			from = time.Time{}
		case 1:
			to = time.Time{}
		}
		var want []int64
		for _, d := range newestFirst {
			if (from.IsZero() || !d.CreatedAt.Before(from)) && (to.IsZero() || d.CreatedAt.Before(to)) {
				want = append(want, d.Seq)
			}
		}
		hits, err := x.Search(ctx, tenant, fulltext.Query{Text: "tick", From: from, To: to, Limit: len(docs) + 1})
		if err != nil {
			t.Fatalf("Search from %d to %d: %v", from.UnixMilli(), to.UnixMilli(), err)
		}
		got := make([]int64, len(hits))
		for i, h := range hits {
			got[i] = h.Seq
		}
		if !slices.Equal(got, want) {
			t.Fatalf("from %d to %d (ms): %d hits %v, want %d %v", from.UnixMilli(), to.UnixMilli(), len(got), got, len(want), want)
		}
	}
}
