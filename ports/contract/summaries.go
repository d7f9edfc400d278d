package contract

import (
	"context"
	"testing"

	"imd/core/social"
	"imd/core/stats"
	"imd/ports"
)

// SummariesFactory returns the statistics of an empty tenant with the stores that feed them.
type SummariesFactory func(t *testing.T) (s ports.Summaries, store ports.MessageStore, shards ports.ShardStore, dir ports.Directory, tenant string)

// Summaries runs the statistics contract: month sums follow the route mirror the message store
// keeps, totals follow the directory.
func Summaries(t *testing.T, newSummaries SummariesFactory) {
	s, store, shards, dir, tenant := newSummaries(t)
	ctx := context.Background()
	if got, err := s.MirrorMonths(ctx, tenant); err != nil || len(got) != 0 {
		t.Fatalf("MirrorMonths of an empty tenant = %+v, %v", got, err)
	}
	writable(t, shards, tenant, monthA)
	writable(t, shards, tenant, monthB)
	mustAppend(t, store, tenant, newMessage("grp_1", 1, 1, monthA), ports.Stored)
	mustAppend(t, store, tenant, newMessage("grp_1", 2, 2, monthA), ports.Stored)
	mustAppend(t, store, tenant, newMessage("p2p_1_2", 1, 3, monthA), ports.Stored)
	mustAppend(t, store, tenant, newMessage("grp_1", 3, 4, monthB), ports.Stored)
	got, err := s.MirrorMonths(ctx, tenant)
	if err != nil {
		t.Fatalf("MirrorMonths: %v", err)
	}
	want := []stats.MirrorMonth{
		{Month: monthA, Messages: 3, Topics: 2, GroupTopics: 1, FirstAt: newMessage("grp_1", 1, 1, monthA).CreatedAt, LastAt: newMessage("grp_1", 2, 2, monthA).CreatedAt},
		{Month: monthB, Messages: 1, Topics: 1, GroupTopics: 1, FirstAt: newMessage("grp_1", 3, 4, monthB).CreatedAt, LastAt: newMessage("grp_1", 3, 4, monthB).CreatedAt},
	}
	if len(got) != len(want) {
		t.Fatalf("MirrorMonths = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Month != w.Month || g.Messages != w.Messages || g.Topics != w.Topics || g.GroupTopics != w.GroupTopics ||
			!g.FirstAt.Equal(w.FirstAt) || !g.LastAt.Equal(w.LastAt) {
			t.Fatalf("MirrorMonths[%d] = %+v, want %+v", i, g, w)
		}
	}

	for _, id := range []int64{1, 2, 3} {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: id}); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 1, Owner: 1}, 100, nil); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	if tot, err := s.Totals(ctx, tenant); err != nil || tot != (stats.Totals{Users: 3, Groups: 1}) {
		t.Fatalf("Totals = %+v, %v; want 3 users, 1 group", tot, err)
	}
}
