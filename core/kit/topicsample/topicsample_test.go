package topicsample

import (
	"context"
	"slices"
	"testing"

	"github.com/imdhq/imd/core/domain/month"
)

// Each call takes the next share of every month, without repeats across months, wrapping at
// a month's end; a month left out forgets its cursor.
func TestNextWalksEveryMonthAndWraps(t *testing.T) {
	sep, oct := month.Month(202609), month.Month(202610)
	topics := map[month.Month][]string{sep: {"a", "b", "c"}, oct: {"b", "x"}}
	list := func(_ context.Context, m month.Month, after string, limit int) ([]string, error) {
		var out []string
		for _, t := range topics[m] {
			if t > after && len(out) < limit {
				out = append(out, t)
			}
		}
		return out, nil
	}
	c := New()
	steps := []struct {
		months []month.Month
		want   []string
	}{
		{[]month.Month{sep, oct}, []string{"a", "b", "x"}}, // two each; oct's b is sep's already
		{[]month.Month{sep, oct}, []string{"c"}},
		{[]month.Month{sep, oct}, []string{"a", "b", "x"}}, // both wrapped after a short page
		{[]month.Month{oct}, nil},                          // oct's cursor was at its end
		{[]month.Month{oct}, []string{"b", "x"}},
		{[]month.Month{sep}, []string{"a", "b", "c"}}, // sep's cursor was forgotten
	}
	for i, s := range steps {
		got, err := c.Next(context.Background(), "t1", s.months, 3, list)
		if err != nil || !slices.Equal(got, s.want) {
			t.Fatalf("call %d: %v, %v; want %v", i+1, got, err, s.want)
		}
	}
}
