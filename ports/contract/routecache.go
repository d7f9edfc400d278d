package contract

import (
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

// RouteFixture is a route cache bound to one fresh tenant.
type RouteFixture struct {
	Tenant string
	Routes ports.RouteCache
}

// RouteCache checks ports.RouteCache (seed 000 §3.3): Replace writes a whole route, Apply
// merges committed ranges the way the MySQL mirror upsert does, Segments reads it back.
// fresh must return a new tenant on every call.
func RouteCache(t *testing.T, fresh func(t *testing.T) RouteFixture) {
	jun, jul, aug := month.Month(203106), month.Month(203107), month.Month(203108)
	at := func(day, hour int) time.Time { return time.Date(2031, 6, day, hour, 0, 0, 0, time.UTC) }

	t.Run("missing route is not found", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		routeExpect(t, f, "grp_1", nil)
	})

	t.Run("replace writes a route and segments reads it in seq order", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		r := route.Route{
			{Month: jul, MinSeq: 11, MaxSeq: 30, Count: 20, MinCreatedAt: at(30, 1), MaxCreatedAt: at(30, 2)},
			{Month: jun, MinSeq: 1, MaxSeq: 10, Count: 10, MinCreatedAt: at(1, 1).Add(123 * time.Millisecond), MaxCreatedAt: at(2, 1)},
			{Month: aug, MinSeq: 31, MaxSeq: 31, Count: 1}, // unknown times stay zero
		}
		routeReplace(t, f, "grp_1", r)
		routeExpect(t, f, "grp_1", route.Normalize(r))
	})

	t.Run("times keep millisecond precision", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		seg := route.Segment{Month: jun, MinSeq: 1, MaxSeq: 1, Count: 1,
			MinCreatedAt: at(1, 1).Add(1500 * time.Microsecond), MaxCreatedAt: at(1, 1).In(time.FixedZone("x", 3600))}
		routeReplace(t, f, "grp_1", route.Route{seg})
		seg.MinCreatedAt = at(1, 1).Add(time.Millisecond)
		seg.MaxCreatedAt = at(1, 1)
		routeExpect(t, f, "grp_1", route.Route{seg})
	})

	t.Run("replace overwrites and an empty route deletes", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		routeReplace(t, f, "grp_1", route.Route{{Month: jun, MinSeq: 1, MaxSeq: 10, Count: 10}, {Month: jul, MinSeq: 11, MaxSeq: 12, Count: 2}})
		next := route.Route{{Month: aug, MinSeq: 1, MaxSeq: 5, Count: 5}}
		routeReplace(t, f, "grp_1", next)
		routeExpect(t, f, "grp_1", next)
		routeReplace(t, f, "grp_1", nil)
		routeExpect(t, f, "grp_1", nil)
	})

	t.Run("apply merges min, max, count and times", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		routeReplace(t, f, "grp_1", route.Route{{Month: jun, MinSeq: 10, MaxSeq: 20, Count: 11, MinCreatedAt: at(10, 0), MaxCreatedAt: at(20, 0)}})
		routeApply(t, f,
			ports.RouteUpdate{Topic: "grp_1", Segment: route.Segment{Month: jun, MinSeq: 5, MaxSeq: 8, Count: 4, MinCreatedAt: at(5, 0), MaxCreatedAt: at(8, 0)}},
			ports.RouteUpdate{Topic: "grp_1", Segment: route.Segment{Month: jun, MinSeq: 21, MaxSeq: 25, Count: 5}},
			ports.RouteUpdate{Topic: "grp_1", Segment: route.Segment{Month: jun, MinSeq: 26, MaxSeq: 26, Count: 1, MinCreatedAt: at(26, 0), MaxCreatedAt: at(26, 0)}},
			ports.RouteUpdate{Topic: "grp_1", Segment: route.Segment{Month: jul, MinSeq: 27, MaxSeq: 30, Count: 4, MinCreatedAt: at(30, 1), MaxCreatedAt: at(30, 2)}},
		)
		routeExpect(t, f, "grp_1", route.Route{
			{Month: jun, MinSeq: 5, MaxSeq: 26, Count: 21, MinCreatedAt: at(5, 0), MaxCreatedAt: at(26, 0)},
			{Month: jul, MinSeq: 27, MaxSeq: 30, Count: 4, MinCreatedAt: at(30, 1), MaxCreatedAt: at(30, 2)},
		})
	})

	t.Run("apply leaves topics without a route alone", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		routeReplace(t, f, "grp_1", route.Route{{Month: jun, MinSeq: 1, MaxSeq: 1, Count: 1}})
		routeApply(t, f,
			ports.RouteUpdate{Topic: "grp_2", Segment: route.Segment{Month: jul, MinSeq: 9, MaxSeq: 9, Count: 1}},
			ports.RouteUpdate{Topic: "grp_1", Segment: route.Segment{Month: jun, MinSeq: 2, MaxSeq: 2, Count: 1}},
		)
		// A route made of the newest update alone would hide grp_2's older months.
		routeExpect(t, f, "grp_2", nil)
		routeExpect(t, f, "grp_1", route.Route{{Month: jun, MinSeq: 1, MaxSeq: 2, Count: 2}})
		routeApply(t, f) // an empty batch is a no-op
	})

	t.Run("seqs past 2^53 stay exact", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		const base = int64(1) << 60 // doubles are 256 apart here
		routeReplace(t, f, "grp_1", route.Route{{Month: jun, MinSeq: base + 3, MaxSeq: base + 5, Count: 3}})
		routeApply(t, f,
			ports.RouteUpdate{Topic: "grp_1", Segment: route.Segment{Month: jun, MinSeq: base + 1, MaxSeq: base + 1, Count: 1}},
			ports.RouteUpdate{Topic: "grp_1", Segment: route.Segment{Month: jun, MinSeq: base + 7, MaxSeq: base + 7, Count: 1}},
		)
		routeExpect(t, f, "grp_1", route.Route{{Month: jun, MinSeq: base + 1, MaxSeq: base + 7, Count: 5}})
	})

	t.Run("bad segments are rejected", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		bad := map[string]route.Route{
			"invalid month":  {{Month: 203113, MinSeq: 1, MaxSeq: 1}},
			"min above max":  {{Month: jun, MinSeq: 5, MaxSeq: 4}},
			"zero seq":       {{Month: jun, MinSeq: 0, MaxSeq: 4}},
			"negative count": {{Month: jun, MinSeq: 1, MaxSeq: 4, Count: -1}},
			"month twice":    {{Month: jun, MinSeq: 1, MaxSeq: 4}, {Month: jun, MinSeq: 5, MaxSeq: 6}},
		}
		for name, r := range bad {
			if err := f.Routes.Replace(t.Context(), f.Tenant, "grp_1", r); err == nil {
				t.Errorf("Replace with %s succeeded", name)
			}
			if name == "month twice" {
				continue // a batch may carry one month twice; Apply merges it
			}
			if err := f.Routes.Apply(t.Context(), f.Tenant, []ports.RouteUpdate{{Topic: "grp_1", Segment: r[0]}}); err == nil {
				t.Errorf("Apply with %s succeeded", name)
			}
		}
		if err := f.Routes.Replace(t.Context(), f.Tenant, "not a topic", nil); err == nil {
			t.Error("Replace of a bad topic succeeded")
		}
		routeExpect(t, f, "grp_1", nil)
	})
}

func routeReplace(t *testing.T, f RouteFixture, topic string, r route.Route) {
	t.Helper()
	if err := f.Routes.Replace(t.Context(), f.Tenant, topic, r); err != nil {
		t.Fatalf("Replace(%s): %v", topic, err)
	}
}

func routeApply(t *testing.T, f RouteFixture, updates ...ports.RouteUpdate) {
	t.Helper()
	if err := f.Routes.Apply(t.Context(), f.Tenant, updates); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// routeExpect reads the topic's route; want nil means it must not be found.
func routeExpect(t *testing.T, f RouteFixture, topic string, want route.Route) {
	t.Helper()
	got, found, err := f.Routes.Segments(t.Context(), f.Tenant, topic)
	if err != nil {
		t.Fatalf("Segments(%s): %v", topic, err)
	}
	if found != (want != nil) || len(got) != len(want) {
		t.Fatalf("Segments(%s) = %+v, found=%v; want %+v", topic, got, found, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Month != w.Month || g.MinSeq != w.MinSeq || g.MaxSeq != w.MaxSeq || g.Count != w.Count ||
			!g.MinCreatedAt.Equal(w.MinCreatedAt) || !g.MaxCreatedAt.Equal(w.MaxCreatedAt) ||
			g.MinCreatedAt.Location() != time.UTC || g.MaxCreatedAt.Location() != time.UTC {
			t.Fatalf("Segments(%s)[%d] = %+v; want %+v (times in UTC)", topic, i, g, w)
		}
	}
}
