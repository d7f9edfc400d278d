package presence_test

import (
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	domain "github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/presence"
)

// BenchmarkPresenceChurn is issue 31's churn: 1,000 users with 50 friends each, every one
// connecting and disconnecting. One op is one user's arrival (look-up, claim, change) and
// departure (release, look-up, change), each pushed to 50 friends: two presence events.
// On the memory fakes it measures the service's own CPU per event; the benchmarks page says what
// Redis and MySQL add
// (docs/BENCHMARKS.md, section 27).
func BenchmarkPresenceChurn(b *testing.B) {
	const users, friends = 1000, 50
	ctx := b.Context()
	clock := memory.NewClock(time.UnixMilli(1_796_169_600_000))
	dir := memory.NewDirectory()
	for u := int64(1); u <= users; u++ {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			b.Fatal(err)
		}
	}
	for u := int64(1); u <= users; u++ { // a ring: u is friends with the 25 after it (and so the 25 before)
		for k := int64(1); k <= friends/2; k++ {
			if err := dir.AddFriendship(ctx, tenant, u, (u+k-1)%users+1); err != nil {
				b.Fatal(err)
			}
		}
	}
	nodes, records, pusher := memory.NewNodes(clock.Now), memory.NewPresence(), &memory.Pushes{}
	if _, err := nodes.Mend(ctx, tenant, time.Minute, false, false); err != nil { // a first node's first pass: whole
		b.Fatal(err)
	}
	svc := presence.New(presence.Config{}, presence.Deps{
		Presence: nodes, Nodes: liveness{"1-aa": true}, Records: records, Settings: records,
		Friends: dir, Groups: dir, Members: dir, Pusher: pusher, Clock: clock, Metrics: memory.NewMetrics(), Log: quiet,
	})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		u := int64(i%users + 1)
		e := domain.Entry{User: u, Device: 1, Node: "1-aa", Token: uint64(i + 1)}
		if !svc.Arriving(ctx, tenant, u) {
			if _, _, err := nodes.Claim(ctx, tenant, e); err != nil {
				b.Fatal(err)
			}
			svc.Arrived(ctx, tenant, u)
		}
		if err := nodes.Release(ctx, tenant, e); err != nil {
			b.Fatal(err)
		}
		svc.Left(ctx, tenant, []int64{u})
		if i%users == users-1 {
			pusher.Take()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/event")
}
