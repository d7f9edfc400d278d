package redis

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/route"
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
