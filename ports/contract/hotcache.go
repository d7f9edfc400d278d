package contract

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

// HotFixture is a hot cache bound to one fresh tenant, keeping Window of messages and at most
// MaxPerTopic per topic, and the commit follow-up that writes it (ports.FollowUp.Hot).
type HotFixture struct {
	Tenant   string
	Cache    ports.HotCache
	FollowUp ports.CommitFollowUp
}

// hotWindow and hotMax are the limits the suite asks its fixtures for.
const (
	hotWindow = time.Hour
	hotMax    = 10
)

// HotCache checks ports.HotCache as a commit follow-up's hot part writes it (seed 000 §6.1):
// ranges in both directions, one entry per seq, trimming from the lowest seq by count and by
// age, invalidation, isolation, bad input refused. fresh must return a new tenant whose cache
// keeps window and maxPerTopic.
func HotCache(t *testing.T, fresh func(t *testing.T, window time.Duration, maxPerTopic int) HotFixture) {
	base := time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)
	msg := func(topicName string, sq int64, at time.Time) message.Message {
		m := newMessage(topicName, sq, 1000+sq, month.Of(at))
		m.CreatedAt = at
		return m
	}
	// put caches seqs from..to of grp_1, a second apart from base.
	put := func(t *testing.T, f HotFixture, from, to int64) {
		t.Helper()
		for s := from; s <= to; s++ {
			hotPut(t, f, msg("grp_1", s, base.Add(time.Duration(s)*time.Second)))
		}
	}

	cases := []struct {
		name string
		run  func(t *testing.T, f HotFixture)
	}{
		{"absent topic is empty", func(t *testing.T, f HotFixture) {
			wantSeqs(t, hotAfter(t, f, "grp_1", 0, 10))
			wantSeqs(t, hotBefore(t, f, "grp_1", 0, 10))
		}},
		{"after and before page by seq", func(t *testing.T, f HotFixture) {
			put(t, f, 1, 6)
			wantSeqs(t, hotAfter(t, f, "grp_1", 0, 10), 1, 2, 3, 4, 5, 6)
			wantSeqs(t, hotAfter(t, f, "grp_1", 2, 3), 3, 4, 5)
			wantSeqs(t, hotAfter(t, f, "grp_1", 6, 3))
			wantSeqs(t, hotBefore(t, f, "grp_1", 0, 4), 6, 5, 4, 3)
			wantSeqs(t, hotBefore(t, f, "grp_1", 3, 10), 2, 1)
			wantSeqs(t, hotBefore(t, f, "grp_1", 1, 10))
			wantSeqs(t, hotAfter(t, f, "grp_1", 0, 0))
		}},
		{"messages come back whole", func(t *testing.T, f HotFixture) {
			m := msg("grp_1", 1, base.Add(123*time.Millisecond))
			m.Mentions, m.MentionAll, m.ReplySeq = []int64{7, 9}, true, 1
			m.EditedAt, m.Version = base.Add(time.Second), 2
			hotPut(t, f, m)
			got := hotAfter(t, f, "grp_1", 0, 1)
			wantSeqs(t, got, 1)
			sameMessage(t, got[0], m)
		}},
		{"a seq put again replaces its entry", func(t *testing.T, f HotFixture) {
			put(t, f, 1, 3)
			m := msg("grp_1", 2, base.Add(2*time.Second))
			m.Status, m.Content = message.StatusRecalled, json.RawMessage(`{}`)
			hotPut(t, f, m)
			got := hotAfter(t, f, "grp_1", 0, 10)
			wantSeqs(t, got, 1, 2, 3)
			if got[1].Status != message.StatusRecalled {
				t.Fatalf("seq 2 = %+v, want the recalled version", got[1])
			}
		}},
		{"invalidate drops one seq", func(t *testing.T, f HotFixture) {
			put(t, f, 1, 4)
			if err := f.Cache.Invalidate(context.Background(), f.Tenant, "grp_1", 3); err != nil {
				t.Fatal(err)
			}
			if err := f.Cache.Invalidate(context.Background(), f.Tenant, "grp_2", 3); err != nil {
				t.Fatalf("invalidate of an absent topic: %v", err)
			}
			wantSeqs(t, hotAfter(t, f, "grp_1", 0, 10), 1, 2, 4)
		}},
		{"count cap trims the lowest seqs", func(t *testing.T, f HotFixture) {
			put(t, f, 1, hotMax+5)
			wantSeqs(t, hotAfter(t, f, "grp_1", 0, 100), seqs(6, hotMax+5)...)
		}},
		{"age trims entries older than the window before the newest", func(t *testing.T, f HotFixture) {
			put(t, f, 1, 3)
			hotPut(t, f, msg("grp_1", 4, base.Add(2*time.Second+hotWindow))) // seq 1 falls out, 2 is on the edge
			wantSeqs(t, hotAfter(t, f, "grp_1", 0, 10), 2, 3, 4)
		}},
		{"age trimming stops at the first fresh entry, so what stays is contiguous", func(t *testing.T, f HotFixture) {
			put(t, f, 1, 2)
			hotPut(t, f, msg("grp_1", 3, base.Add(-hotWindow)))                      // an old clock on another node
			hotPut(t, f, msg("grp_1", 4, base.Add(hotWindow+1500*time.Millisecond))) // seq 1 falls out, 3 stays
			wantSeqs(t, hotAfter(t, f, "grp_1", 0, 10), 2, 3, 4)
		}},
		{"tenants and topics are apart", func(t *testing.T, f HotFixture) {
			put(t, f, 1, 2)
			hotPut(t, f, msg("grp_2", 9, base))
			other := fresh(t, hotWindow, hotMax)
			wantSeqs(t, hotAfter(t, other, "grp_1", 0, 10))
			wantSeqs(t, hotAfter(t, f, "grp_2", 0, 10), 9)
		}},
		{"seqs past 2^53 are not cached", func(t *testing.T, f HotFixture) {
			hotPut(t, f, msg("grp_1", 1<<53+1, base))
			wantSeqs(t, hotBefore(t, f, "grp_1", 0, 10))
		}},
		{"bad input is rejected", func(t *testing.T, f HotFixture) {
			ctx := context.Background()
			put := func(tenant string, m message.Message) error {
				return f.FollowUp.Apply(ctx, tenant, ports.FollowUp{Hot: &m}).Hot
			}
			if err := put(f.Tenant, msg("not a topic", 1, base)); err == nil {
				t.Error("caching a bad topic succeeded")
			}
			if err := put("bad{tenant}", msg("grp_1", 1, base)); err == nil {
				t.Error("caching for a bad tenant succeeded")
			}
			if err := put(f.Tenant, msg("grp_1", 0, base)); err == nil {
				t.Error("caching seq 0 succeeded")
			}
			noTime := msg("grp_1", 1, base)
			noTime.CreatedAt = time.Time{}
			if err := put(f.Tenant, noTime); err == nil {
				t.Error("caching without a creation time succeeded")
			}
			if _, err := f.Cache.After(ctx, f.Tenant, "grp_01", 0, 1); err == nil {
				t.Error("After of a bad topic succeeded")
			}
			wantSeqs(t, hotAfter(t, f, "grp_1", 0, 10))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, fresh(t, hotWindow, hotMax))
		})
	}
}

func seqs(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func hotPut(t *testing.T, f HotFixture, m message.Message) {
	t.Helper()
	if err := f.FollowUp.Apply(context.Background(), f.Tenant, ports.FollowUp{Hot: &m}).Hot; err != nil {
		t.Fatalf("caching %s seq %d: %v", m.Topic, m.Seq, err)
	}
}

func hotAfter(t *testing.T, f HotFixture, topicName string, after int64, limit int) []message.Message {
	t.Helper()
	got, err := f.Cache.After(context.Background(), f.Tenant, topicName, after, limit)
	if err != nil {
		t.Fatalf("After(%s, %d, %d): %v", topicName, after, limit, err)
	}
	return got
}

func hotBefore(t *testing.T, f HotFixture, topicName string, before int64, limit int) []message.Message {
	t.Helper()
	got, err := f.Cache.Before(context.Background(), f.Tenant, topicName, before, limit)
	if err != nil {
		t.Fatalf("Before(%s, %d, %d): %v", topicName, before, limit, err)
	}
	return got
}

// RouteFillFixture is a route filler bound to one fresh tenant.
type RouteFillFixture struct {
	Tenant string
	Routes ports.RouteFiller
}

// RouteFill checks ports.RouteFiller: ReplaceIfMissing writes a route only where none is, so a
// stale mirror snapshot never overwrites a newer route.
func RouteFill(t *testing.T, fresh func(t *testing.T) RouteFillFixture) {
	jun, jul := month.Month(203106), month.Month(203107)
	old := route.Route{{Month: jun, MinSeq: 1, MaxSeq: 10, Count: 10}}
	newer := route.Route{{Month: jun, MinSeq: 1, MaxSeq: 10, Count: 10}, {Month: jul, MinSeq: 11, MaxSeq: 12, Count: 2}}
	cases := []struct {
		name        string
		existing    route.Route // nil: no route
		fill        route.Route
		wantWritten bool
		want        route.Route // nil: not found
	}{
		{"fills a missing route", nil, newer, true, newer},
		{"keeps an existing route", newer, old, false, newer},
		{"an empty route writes nothing", nil, nil, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := fresh(t)
			ctx := context.Background()
			if tc.existing != nil {
				if err := f.Routes.Replace(ctx, f.Tenant, "grp_1", tc.existing); err != nil {
					t.Fatal(err)
				}
			}
			written, err := f.Routes.ReplaceIfMissing(ctx, f.Tenant, "grp_1", tc.fill)
			if err != nil || written != tc.wantWritten {
				t.Fatalf("ReplaceIfMissing = %v, %v; want written=%v", written, err, tc.wantWritten)
			}
			routeExpect(t, RouteFixture{Tenant: f.Tenant, Routes: f.Routes}, "grp_1", tc.want)
		})
	}
	t.Run("bad segments are rejected", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		for name, r := range map[string]route.Route{
			"invalid month": {{Month: 203113, MinSeq: 1, MaxSeq: 1}},
			"month twice":   {{Month: jun, MinSeq: 1, MaxSeq: 4}, {Month: jun, MinSeq: 5, MaxSeq: 6}},
		} {
			if _, err := f.Routes.ReplaceIfMissing(context.Background(), f.Tenant, "grp_1", r); err == nil {
				t.Errorf("ReplaceIfMissing with %s succeeded", name)
			}
		}
		routeExpect(t, RouteFixture{Tenant: f.Tenant, Routes: f.Routes}, "grp_1", nil)
	})
}

// HiddenFixture is a delete log and its reader over one fresh tenant.
type HiddenFixture struct {
	Tenant string
	Log    ports.DeleteLog
	Ranges ports.HiddenRanges
}

// HiddenRanges checks ports.HiddenRanges: it returns what DeleteLog recorded for one user and
// topic, limited to the ranges intersecting the asked seqs.
func HiddenRanges(t *testing.T, fresh func(t *testing.T) HiddenFixture) {
	f := fresh(t)
	ctx := context.Background()
	for _, r := range []struct {
		topic           string
		user, low, high int64
	}{{"grp_1", 7, 3, 5}, {"grp_1", 7, 10, 20}, {"grp_1", 8, 1, 100}, {"grp_2", 7, 1, 100}} {
		if err := f.Log.HideRange(ctx, f.Tenant, r.topic, r.user, r.low, r.high); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		from, to int64
		want     string
	}{
		{1, 100, "[{3 5} {10 20}]"},
		{5, 9, "[]"}, // hi is exclusive
		{4, 10, "[{3 5} {10 20}]"},
		{20, 30, "[]"},
		{19, 19, "[{10 20}]"},
	}
	for _, tc := range cases {
		got, err := f.Ranges.HiddenRanges(ctx, f.Tenant, "grp_1", 7, tc.from, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b ports.SeqRange) int { return cmp.Compare(a.Low, b.Low) })
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("HiddenRanges(grp_1, 7, %d, %d) = %s, want %s", tc.from, tc.to, s, tc.want)
		}
	}
}
