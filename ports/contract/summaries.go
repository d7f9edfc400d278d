package contract

import (
	"context"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/stats"
	"github.com/imdhq/imd/ports"
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
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 1, Owner: 1}, 100, nil, 0); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	if tot, err := s.Totals(ctx, tenant); err != nil || tot != (stats.Totals{Users: 3, Groups: 1}) {
		t.Fatalf("Totals = %+v, %v; want 3 users, 1 group", tot, err)
	}
}

// DailyFactory returns the statistics of an empty tenant and what adds to its daily summary.
type DailyFactory func(t *testing.T) (s ports.Summaries, counter ports.DailyCounter, tenant string)

// DailySummaries runs the daily summary contract: additions to a day sum up, days are UTC
// dates, and a page keeps the newest days of the range in ascending order.
func DailySummaries(t *testing.T, newDaily DailyFactory) {
	s, counter, tenant := newDaily(t)
	ctx := context.Background()
	day := func(d int) time.Time { return time.Date(2030, 3, d, 0, 0, 0, 0, time.UTC) }
	if got, err := s.Days(ctx, tenant, day(1), day(31), 10); err != nil || len(got) != 0 {
		t.Fatalf("Days of an empty tenant = %+v, %v", got, err)
	}
	for _, d := range []stats.Day{
		{Day: day(2), Messages: 3, GroupMessages: 2, P2PMessages: 1},
		{Day: day(2).Add(13 * time.Hour), Messages: 2, GroupMessages: 2},
		{Day: day(5), Messages: 1, P2PMessages: 1},
		// 23:30 in UTC-05:00 is 04:30 on the 2nd in UTC: the UTC date counts.
		{Day: time.Date(2030, 3, 1, 23, 30, 0, 0, time.FixedZone("EST", -5*3600)), Messages: 4, GroupMessages: 4},
		{Day: day(1).Add(-time.Minute), Messages: 7, GroupMessages: 7},
	} {
		if err := counter.AddDay(ctx, tenant, d); err != nil {
			t.Fatalf("AddDay %v: %v", d.Day, err)
		}
	}
	feb28 := stats.Day{Day: time.Date(2030, 2, 28, 0, 0, 0, 0, time.UTC), Messages: 7, GroupMessages: 7}
	mar2 := stats.Day{Day: day(2), Messages: 9, GroupMessages: 8, P2PMessages: 1}
	mar5 := stats.Day{Day: day(5), Messages: 1, P2PMessages: 1}
	tests := []struct {
		name     string
		from, to time.Time
		limit    int
		want     []stats.Day
	}{
		{"all", feb28.Day, day(31), 10, []stats.Day{feb28, mar2, mar5}},
		{"one day, given with a time of day", day(2).Add(20 * time.Hour), day(2).Add(time.Hour), 10, []stats.Day{mar2}},
		{"the newest when limited", feb28.Day, day(31), 2, []stats.Day{mar2, mar5}},
		{"a range without rows", day(3), day(4), 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Days(ctx, tenant, tt.from, tt.to, tt.limit)
			if err != nil {
				t.Fatalf("Days: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Days = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if !g.Day.Equal(w.Day) || g.Day.Location() != time.UTC || g.Messages != w.Messages ||
					g.GroupMessages != w.GroupMessages || g.P2PMessages != w.P2PMessages {
					t.Fatalf("Days[%d] = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}
