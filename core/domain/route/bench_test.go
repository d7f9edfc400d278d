package route

import (
	"testing"

	"github.com/imdhq/imd/core/domain/month"
)

// benchRoute is a topic written every month for ten years, 10,000 messages a month: route
// selection must stay cheap however long a topic's history is (DESIGN §10 cost growth).
func benchRoute() Route {
	segs := make([]Segment, 0, 120)
	m := month.Month(201601)
	for i := range 120 {
		segs = append(segs, Segment{Month: m, MinSeq: int64(i)*10_000 + 1, MaxSeq: int64(i+1) * 10_000, Count: 10_000})
		m = m.Next()
	}
	return Normalize(segs)
}

// BenchmarkRouteSelection measures the table selection of each query kind over benchRoute.
func BenchmarkRouteSelection(b *testing.B) {
	r := benchRoute()
	top := r.MaxSeq()
	cases := []struct {
		name string
		run  func(i int)
	}{
		{"locate", func(i int) { r.Locate(int64(i)%top + 1) }},
		{"before", func(i int) { r.Before(int64(i)%top + 1) }},
		{"since", func(i int) { r.Since(top - int64(i)%50) }},
		{"around", func(i int) { r.Around(int64(i)%top+1, int64(i)%top+50) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.run(i)
				i += 7919
			}
		})
	}
}
