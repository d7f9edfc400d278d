package redis

import (
	"context"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/delivery"
	domain "github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/usecase/presence"
)

// ringFriends is the churn's friendships without a directory's cost: user u is friends with
// the half ring of friends/2 on each side (the memory directory scans every friendship of the
// tenant, which would hide what Redis costs).
type ringFriends struct {
	*memory.Directory // the rest of ports.Friends, never asked
	users, n          int64
}

func (r ringFriends) Friends(_ context.Context, _ string, user, after int64, limit int) ([]int64, error) {
	var out []int64
	for k := int64(1); k <= r.n/2; k++ {
		for _, f := range []int64{(user+k-1)%r.users + 1, (user-k-1+r.users)%r.users + 1} {
			if f > after {
				out = append(out, f)
			}
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// lookupPusher looks the recipients of each push up in the registry, as the cluster pusher
// does to find their nodes (docs/NODES.md), then hands it over.
type lookupPusher struct {
	*memory.Pushes
	nodes *Nodes
}

func (p lookupPusher) PushReach(ctx context.Context, tenant string, pushes ...delivery.Addressed) []delivery.Outcome {
	for _, a := range pushes {
		if _, err := p.nodes.Lookup(ctx, tenant, a.Target.Recipients); err != nil {
			panic(err)
		}
	}
	return p.Pushes.PushReach(ctx, tenant, pushes...)
}

type oneNode string

func (n oneNode) Live(_, node string) bool { return node == string(n) }

// BenchmarkPresenceChurnRedis is issue 31's churn against the real Redis: 1,000 users with 50
// friends each connect and disconnect through the presence use case, the registry being this
// adapter's (look-up, claim, release, look-up, and the pusher's look-up of the 50 recipients);
// last_seen and settings stay on the memory fakes. It reports
// the wall time, this process's CPU and the Redis server's CPU (INFO cpu, so whatever else
// the shared server runs meanwhile counts too) per event (docs/BENCHMARKS.md, section 27).
func BenchmarkPresenceChurnRedis(b *testing.B) {
	const users, friends = 1000, 50
	c := testClient(b)
	tenant := testTenant(b, c)
	ctx := b.Context()
	nodes, records := NewNodes(c), memory.NewPresence()
	if _, err := nodes.Mend(ctx, tenant, time.Minute, false, false); err != nil { // a first node's first pass: whole
		b.Fatal(err)
	}
	dir := memory.NewDirectory()
	pusher := lookupPusher{Pushes: &memory.Pushes{}, nodes: nodes}
	svc := presence.New(presence.Config{}, presence.Deps{
		Presence: nodes, Nodes: oneNode("1-aa"), Records: records, Settings: records,
		Friends: ringFriends{Directory: dir, users: users, n: friends}, Groups: dir, Members: dir, Pusher: pusher,
		Clock: memory.NewClock(time.UnixMilli(1_796_169_600_000)), Metrics: memory.NewMetrics(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	// Waves, unlike the memory benchmark's one-user round trips: all 1,000 connect, then all
	// disconnect, so each look-up meets a registry full of the others. One op is one event.
	tokens := make([]uint64, users+1)
	cpu0, redis0 := processCPU(b), redisCPU(b, c)
	b.ResetTimer()
	for i := range b.N {
		u, leaving := int64(i%users+1), (i/users)%2 == 1
		switch {
		case leaving:
			if err := nodes.Release(ctx, tenant, domain.Entry{User: u, Device: 1, Node: "1-aa", Token: tokens[u]}); err != nil {
				b.Fatal(err)
			}
			svc.Left(ctx, tenant, []int64{u})
		case !svc.Arriving(ctx, tenant, u):
			tokens[u] = uint64(i + 1)
			if _, _, err := nodes.Claim(ctx, tenant, domain.Entry{User: u, Device: 1, Node: "1-aa", Token: tokens[u]}); err != nil {
				b.Fatal(err)
			}
			svc.Arrived(ctx, tenant, u)
		}
		if u == users {
			pusher.Take()
		}
	}
	b.StopTimer()
	events := float64(b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/events, "cpu-ns/event")
	b.ReportMetric(float64((redisCPU(b, c)-redis0).Nanoseconds())/events, "redis-cpu-ns/event")
}

// processCPU is the user and system CPU this process used so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
