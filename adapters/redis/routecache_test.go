package redis

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

// TestRouteSegmentsDamaged covers routes the adapter never writes itself but Redis can hold
// after a partial eviction or a manual edit.
func TestRouteSegmentsDamaged(t *testing.T) {
	c := testClient(t)
	cases := []struct {
		name      string
		meta      string // route_meta value of 203106; empty: field absent
		wantFound bool
		wantErr   bool
	}{
		{name: "intact", meta: "1,9,9,0,0", wantFound: true},
		{name: "meta lost", meta: ""},
		{name: "meta malformed", meta: "1,9", wantErr: true},
		{name: "meta not numbers", meta: "1,x,9,0,0", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tenant := testTenant(t, c)
			k, _ := topicKeys(tenant, "grp_1")
			cmds := []rueidis.Completed{c.B().Zadd().Key(k.Route("grp_1")).ScoreMember().ScoreMember(1, "203106").Build()}
			if tc.meta != "" {
				cmds = append(cmds, c.B().Hset().Key(k.RouteMeta("grp_1")).FieldValue().FieldValue("203106", tc.meta).Build())
			}
			for _, r := range c.DoMulti(t.Context(), cmds...) {
				if err := r.Error(); err != nil {
					t.Fatal(err)
				}
			}
			r, found, err := NewRouteCache(c).Segments(t.Context(), tenant, "grp_1")
			if (err != nil) != tc.wantErr || found != tc.wantFound {
				t.Fatalf("Segments = %+v, %v, %v; want found=%v err=%v", r, found, err, tc.wantFound, tc.wantErr)
			}
		})
	}
}

// TestRouteKeysHaveNoTTL: routes live until the topic or its months are purged (seed 000 §3.3).
func TestRouteKeysHaveNoTTL(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	k, _ := topicKeys(tenant, "grp_1")
	rc := NewRouteCache(c)
	if err := rc.Replace(t.Context(), tenant, "grp_1", route.Route{{Month: 203106, MinSeq: 1, MaxSeq: 2, Count: 2}}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{k.Route("grp_1"), k.RouteMeta("grp_1")} {
		if got := pttl(t, c, key); got != -1 {
			t.Errorf("PTTL %s = %v; want no TTL", key, got)
		}
	}
}

// TestRouteScoreIsTheMonthsMinSeq: the route ZSET orders a topic's months by their min seq
// (seed 000 §3.3), which an apply lowers, and only lowers (luaApplyRoute's ZADD LT).
func TestRouteScoreIsTheMonthsMinSeq(t *testing.T) {
	c := testClient(t)
	tenant := testTenant(t, c)
	k, _ := topicKeys(tenant, "grp_1")
	rc := NewRouteCache(c)
	if err := rc.Replace(t.Context(), tenant, "grp_1", route.Route{{Month: 203106, MinSeq: 10, MaxSeq: 20, Count: 11}}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		apply route.Segment
		month string
		want  float64
	}{
		{"a range above keeps the min", route.Segment{Month: 203106, MinSeq: 21, MaxSeq: 22, Count: 2}, "203106", 10},
		{"a range below lowers it", route.Segment{Month: 203106, MinSeq: 5, MaxSeq: 8, Count: 4}, "203106", 5},
		{"an equal one keeps it", route.Segment{Month: 203106, MinSeq: 5, MaxSeq: 5, Count: 1}, "203106", 5},
		{"a new month joins at its min", route.Segment{Month: 203107, MinSeq: 23, MaxSeq: 30, Count: 8}, "203107", 23},
	}
	for _, s := range steps {
		if err := rc.Apply(t.Context(), tenant, []ports.RouteUpdate{{Topic: "grp_1", Segment: s.apply}}); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, err := c.Do(t.Context(), c.B().Zscore().Key(k.Route("grp_1")).Member(s.month).Build()).AsFloat64()
		if err != nil || got != s.want {
			t.Fatalf("%s: score of %s = %v, %v; want %v", s.name, s.month, got, err, s.want)
		}
	}
}
