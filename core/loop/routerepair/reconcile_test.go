package routerepair_test

import (
	"context"
	"testing"

	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/loop/routerepair"
)

// TestReconcileFindsAndRepairsDifferences damages one topic's Redis route at a time and
// checks the reconciliation classifies it and leaves Redis equal to the mirror.
func TestReconcileFindsAndRepairsDifferences(t *testing.T) {
	tests := []struct {
		name   string
		damage func(f *fixture, good route.Route) route.Route // the route to leave in Redis; nil deletes it
		want   routerepair.Report
		result string
	}{
		{
			name:   "intact route",
			damage: func(_ *fixture, good route.Route) route.Route { return good },
			want:   routerepair.Report{Sampled: 1}, result: "ok",
		},
		{
			name:   "route missing",
			damage: func(*fixture, route.Route) route.Route { return nil },
			want:   routerepair.Report{Sampled: 1, Missing: 1}, result: "missing",
		},
		{
			name: "route behind the mirror",
			damage: func(_ *fixture, good route.Route) route.Route {
				stale := append(route.Route(nil), good...)
				stale[len(stale)-1].MaxSeq--
				return stale
			},
			want: routerepair.Report{Sampled: 1, Stale: 1}, result: "stale",
		},
		{
			name: "route beyond the mirror",
			damage: func(_ *fixture, good route.Route) route.Route {
				wide := append(route.Route(nil), good...)
				wide[len(wide)-1].MaxSeq += 100
				return wide
			},
			want: routerepair.Report{Sampled: 1, Mismatched: 1}, result: "mismatch",
		},
		{
			name: "route with a month the mirror lacks",
			damage: func(_ *fixture, good route.Route) route.Route {
				return append(append(route.Route(nil), good...), route.Segment{Month: 202611, MinSeq: 100, MaxSeq: 100, Count: 1})
			},
			want: routerepair.Report{Sampled: 1, Mismatched: 1}, result: "mismatch",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, routerepair.Config{})
			ctx := context.Background()
			f.write(t, "grp_1", sep, 3)
			f.write(t, "grp_1", oct, 2)
			good, err := f.store.Segments(ctx, tenant, "grp_1")
			if err != nil {
				t.Fatal(err)
			}
			if err := f.routes.Replace(ctx, tenant, "grp_1", tc.damage(f, good)); err != nil {
				t.Fatal(err)
			}
			rep, err := f.svc.Reconcile(ctx, tenant)
			if err != nil || rep != tc.want {
				t.Fatalf("Reconcile = %+v, %v; want %+v", rep, err, tc.want)
			}
			f.expectRoute(t, "grp_1")
			if f.metrics.Count("group_message_route_reconcile_total", tc.result) != 1 {
				t.Fatalf("result %q not counted", tc.result)
			}
		})
	}
}

// TestReconcileWalksEveryTopicOverSeveralPasses: each pass samples the next topics, so with a
// sample of 2 per month, five topics are all compared within three passes.
func TestReconcileWalksEveryTopicOverSeveralPasses(t *testing.T) {
	f := newFixture(t, routerepair.Config{ReconcileSample: 2, ReconcileMonths: 1})
	ctx := context.Background()
	topics := []string{"grp_1", "grp_2", "grp_3", "grp_4", "grp_5"}
	for _, topic := range topics {
		f.write(t, topic, oct, 1)
	}
	total := 0
	for range 3 {
		rep, err := f.svc.Reconcile(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		total += rep.Missing
	}
	if total != len(topics) {
		t.Fatalf("%d routes found missing over three passes, want %d", total, len(topics))
	}
	for _, topic := range topics {
		f.expectRoute(t, topic)
	}
	// The walk starts over.
	if rep, err := f.svc.Reconcile(ctx, tenant); err != nil || rep.Sampled != 2 || rep.Missing != 0 {
		t.Fatalf("fourth pass: %+v %v", rep, err)
	}
}

// TestReconcileRecountsAMirrorThatDiffersFromTheTable: the deep sample compares the mirror
// with the month table and rewrites a wrong mirror row from it, then the route from the mirror.
func TestReconcileRecountsAMirrorThatDiffersFromTheTable(t *testing.T) {
	tests := []struct {
		name          string
		deep          int
		damage        bool
		wantRecounted int
	}{
		{name: "intact mirror is left alone", deep: 1},
		{name: "wrong mirror row is recounted", deep: 1, damage: true, wantRecounted: 1},
		{name: "without a deep sample the tables are not read", deep: 0, damage: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, routerepair.Config{ReconcileDeep: tc.deep})
			ctx := context.Background()
			f.write(t, "grp_1", sep, 3)
			f.write(t, "grp_1", oct, 2)
			if tc.damage {
				f.store.damaged[sep] = route.Segment{Month: sep, MinSeq: 1, MaxSeq: 2, Count: 2}
			}
			rep, err := f.svc.Reconcile(ctx, tenant)
			if err != nil || rep.Recounted != tc.wantRecounted || rep.Deep != tc.deep {
				t.Fatalf("Reconcile = %+v, %v; want %d recounted of %d deep", rep, err, tc.wantRecounted, tc.deep)
			}
			if tc.wantRecounted > 0 {
				f.expectRoute(t, "grp_1") // Redis follows the repaired mirror
			}
		})
	}
}
