package contract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// The suites of the shard lifecycle's ports (ports/repair.go).

// RepairQueueFixture is a route repair queue bound to one fresh tenant.
type RepairQueueFixture struct {
	Tenant string
	Queue  ports.RouteRepairQueue
}

// RouteRepairQueue checks ports.RouteRepairQueue: one ticket per topic, renewed versions,
// Done that never drops a renewed ticket, and the routes_built marker.
func RouteRepairQueue(t *testing.T, fresh func(t *testing.T) RepairQueueFixture) {
	ctx := context.Background()
	t.Run("a topic queued many times waits once", func(t *testing.T) {
		f := fresh(t)
		for _, topic := range []string{"grp_1", "grp_2", "grp_1", "grp_1"} {
			if err := f.Queue.Add(ctx, f.Tenant, topic); err != nil {
				t.Fatalf("Add %s: %v", topic, err)
			}
		}
		if n := repairLen(t, f); n != 2 {
			t.Fatalf("Len = %d, want 2", n)
		}
		got := pendingTopics(t, f, 10)
		if !slices.Equal(got, []string{"grp_1", "grp_2"}) {
			t.Fatalf("Pending = %v, want grp_1 and grp_2", got)
		}
		if got := pendingTopics(t, f, 1); len(got) != 1 {
			t.Fatalf("Pending with limit 1 = %v", got)
		}
		if got := pendingTopics(t, f, 0); len(got) != 0 {
			t.Fatalf("Pending with limit 0 = %v", got)
		}
	})
	t.Run("done removes a ticket unless it was renewed", func(t *testing.T) {
		f := fresh(t)
		if err := f.Queue.Add(ctx, f.Tenant, "grp_1"); err != nil {
			t.Fatal(err)
		}
		old := pending(t, f, 10)[0]
		if err := f.Queue.Add(ctx, f.Tenant, "grp_1"); err != nil {
			t.Fatal(err)
		}
		renewed := pending(t, f, 10)[0]
		if renewed.Version == old.Version {
			t.Fatalf("renewed ticket kept version %d", old.Version)
		}
		if err := f.Queue.Done(ctx, f.Tenant, old); err != nil {
			t.Fatalf("Done of the old ticket: %v", err)
		}
		if n := repairLen(t, f); n != 1 {
			t.Fatalf("the renewed ticket was dropped (Len %d)", n)
		}
		if err := f.Queue.Done(ctx, f.Tenant, renewed); err != nil {
			t.Fatalf("Done: %v", err)
		}
		if n := repairLen(t, f); n != 0 {
			t.Fatalf("Len = %d after Done, want 0", n)
		}
		// A topic done and queued again must not reuse a finished version.
		if err := f.Queue.Add(ctx, f.Tenant, "grp_1"); err != nil {
			t.Fatal(err)
		}
		if err := f.Queue.Done(ctx, f.Tenant, renewed); err != nil {
			t.Fatal(err)
		}
		if n := repairLen(t, f); n != 1 {
			t.Fatal("a late Done of a finished ticket dropped a new one")
		}
	})
	t.Run("done removes a damaged entry", func(t *testing.T) {
		f := fresh(t)
		if err := f.Queue.Done(ctx, f.Tenant, ports.RepairTicket{Topic: "not a topic", Version: 1}); err != nil {
			t.Fatalf("Done of an unknown entry: %v", err)
		}
	})
	t.Run("invalid names are rejected", func(t *testing.T) {
		f := fresh(t)
		if err := f.Queue.Add(ctx, f.Tenant, "not a topic"); err == nil {
			t.Error("Add of an invalid topic succeeded")
		}
		if err := f.Queue.Add(ctx, "Bad{tenant}", "grp_1"); err == nil {
			t.Error("Add for an invalid tenant succeeded")
		}
	})
	t.Run("routes built marker", func(t *testing.T) {
		f := fresh(t)
		if built, err := f.Queue.RoutesBuilt(ctx, f.Tenant); err != nil || built {
			t.Fatalf("RoutesBuilt of a new tenant = %v, %v", built, err)
		}
		if err := f.Queue.MarkRoutesBuilt(ctx, f.Tenant); err != nil {
			t.Fatal(err)
		}
		if built, err := f.Queue.RoutesBuilt(ctx, f.Tenant); err != nil || !built {
			t.Fatalf("RoutesBuilt after marking = %v, %v", built, err)
		}
	})
}

func pending(t *testing.T, f RepairQueueFixture, limit int) []ports.RepairTicket {
	t.Helper()
	got, err := f.Queue.Pending(context.Background(), f.Tenant, limit)
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	return got
}

func pendingTopics(t *testing.T, f RepairQueueFixture, limit int) []string {
	t.Helper()
	var out []string
	for _, p := range pending(t, f, limit) {
		out = append(out, p.Topic)
	}
	slices.Sort(out)
	return out
}

func repairLen(t *testing.T, f RepairQueueFixture) int64 {
	t.Helper()
	n, err := f.Queue.Len(context.Background(), f.Tenant)
	if err != nil {
		t.Fatalf("Len: %v", err)
	}
	return n
}

// CompensationFixture is a compensation list bound to one fresh tenant.
type CompensationFixture struct {
	Tenant string
	List   ports.CompensationList
}

// CompensationList checks ports.CompensationList: whole messages kept in order, once per
// msg_id.
func CompensationList(t *testing.T, fresh func(t *testing.T) CompensationFixture) {
	ctx := context.Background()
	t.Run("entries keep the whole message, in order, once per msg_id", func(t *testing.T) {
		f := fresh(t)
		at := time.Date(2031, 7, 8, 9, 10, 11, 123_000_000, time.UTC)
		var want []ports.Compensation
		for i := range 3 {
			m := newMessage("grp_1", int64(i+1), int64(1001+i), monthA)
			m.Mentions = []int64{5}
			c := ports.Compensation{Message: m, Hash: hashOf(m), Reason: "month 203001 is sealed", At: at}
			for attempt := range 2 { // a client retry lists nothing new
				added, err := f.List.Push(ctx, f.Tenant, c)
				if err != nil || added != (attempt == 0) {
					t.Fatalf("Push %d attempt %d = %v, %v", i, attempt, added, err)
				}
			}
			want = append(want, c)
		}
		if n, err := f.List.Len(ctx, f.Tenant); err != nil || n != 3 {
			t.Fatalf("Len = %d, %v; want 3", n, err)
		}
		got, err := f.List.List(ctx, f.Tenant, 10)
		if err != nil || len(got) != 3 {
			t.Fatalf("List = %+v, %v", got, err)
		}
		for i := range want {
			sameMessage(t, got[i].Message, want[i].Message)
			if got[i].Message.Month != monthA || got[i].Hash != want[i].Hash || got[i].Reason != want[i].Reason || !got[i].At.Equal(at) {
				t.Fatalf("entry %d = %+v, want %+v", i, got[i], want[i])
			}
		}
		if got, err := f.List.List(ctx, f.Tenant, 2); err != nil || len(got) != 2 || got[1].Message.MsgID != 1002 {
			t.Fatalf("List with limit 2 = %+v, %v; want the oldest two", got, err)
		}
		if got, err := f.List.List(ctx, f.Tenant, 0); err != nil || len(got) != 0 {
			t.Fatalf("List with limit 0 = %+v, %v", got, err)
		}
	})
	t.Run("an empty tenant has no entries", func(t *testing.T) {
		f := fresh(t)
		if n, err := f.List.Len(ctx, f.Tenant); err != nil || n != 0 {
			t.Fatalf("Len = %d, %v", n, err)
		}
	})
}

// LocksFixture is a lock service bound to one fresh tenant.
type LocksFixture struct {
	Tenant string
	Locks  ports.Locks
}

// Locks checks ports.Locks: one holder at a time, release by the holder's token only, and
// expiry after the lease.
func Locks(t *testing.T, fresh func(t *testing.T) LocksFixture) {
	ctx := context.Background()
	t.Run("one holder at a time", func(t *testing.T) {
		f := fresh(t)
		token, ok, err := f.Locks.Acquire(ctx, f.Tenant, "shard_switch", time.Minute)
		if err != nil || !ok || token == "" {
			t.Fatalf("Acquire = %q, %v, %v", token, ok, err)
		}
		if _, ok, err := f.Locks.Acquire(ctx, f.Tenant, "shard_switch", time.Minute); err != nil || ok {
			t.Fatalf("second Acquire = %v, %v; want refused", ok, err)
		}
		if _, ok, err := f.Locks.Acquire(ctx, f.Tenant, "other_lock", time.Minute); err != nil || !ok {
			t.Fatalf("another lock name = %v, %v; want free", ok, err)
		}
		if err := f.Locks.Release(ctx, f.Tenant, "shard_switch", token+"x"); err != nil {
			t.Fatalf("Release with a wrong token: %v", err)
		}
		if _, ok, _ := f.Locks.Acquire(ctx, f.Tenant, "shard_switch", time.Minute); ok {
			t.Fatal("a wrong token released the lock")
		}
		if err := f.Locks.Release(ctx, f.Tenant, "shard_switch", token); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if _, ok, err := f.Locks.Acquire(ctx, f.Tenant, "shard_switch", time.Minute); err != nil || !ok {
			t.Fatalf("Acquire after Release = %v, %v", ok, err)
		}
	})
	t.Run("a lease expires", func(t *testing.T) {
		f := fresh(t)
		old, ok, err := f.Locks.Acquire(ctx, f.Tenant, "shard_switch", 50*time.Millisecond)
		if err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		// A renewal before the expiry keeps the lease past it.
		if ok, err := f.Locks.Renew(ctx, f.Tenant, "shard_switch", old, 300*time.Millisecond); err != nil || !ok {
			t.Fatalf("Renew = %v, %v", ok, err)
		}
		time.Sleep(100 * time.Millisecond)
		if _, ok, _ := f.Locks.Acquire(ctx, f.Tenant, "shard_switch", time.Minute); ok {
			t.Fatal("a renewed lease was taken at its first expiry")
		}
		time.Sleep(300 * time.Millisecond)
		token, ok, err := f.Locks.Acquire(ctx, f.Tenant, "shard_switch", time.Minute)
		if err != nil || !ok {
			t.Fatalf("Acquire after expiry = %v, %v", ok, err)
		}
		// The first holder wakes up late: neither its renewal nor its release may touch the new
		// holder's lease, which its own token renews.
		if ok, err := f.Locks.Renew(ctx, f.Tenant, "shard_switch", old, time.Minute); err != nil || ok {
			t.Fatalf("Renew by the expired holder = %v, %v; want refused", ok, err)
		}
		if ok, err := f.Locks.Renew(ctx, f.Tenant, "shard_switch", token, time.Minute); err != nil || !ok {
			t.Fatalf("Renew by the holder = %v, %v", ok, err)
		}
		if err := f.Locks.Release(ctx, f.Tenant, "shard_switch", old); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := f.Locks.Acquire(ctx, f.Tenant, "shard_switch", time.Minute); ok {
			t.Fatal("an expired holder released the new holder's lease")
		}
		if err := f.Locks.Release(ctx, f.Tenant, "shard_switch", token); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("invalid names are rejected", func(t *testing.T) {
		f := fresh(t)
		for _, name := range []string{"", "Shard", "a:b", "x}y"} {
			if _, _, err := f.Locks.Acquire(ctx, f.Tenant, name, time.Second); err == nil {
				t.Errorf("Acquire %q succeeded", name)
			}
		}
	})
}

// MirrorFixture is one fresh tenant's message store with the mirror reader and the upkeep of
// the same database.
type MirrorFixture struct {
	Tenant       string
	Store        ports.MessageStore
	Shards       ports.ShardStore
	Mirror       ports.RouteMirror
	Housekeeping ports.ShardHousekeeping
}

// RouteMirror checks ports.RouteMirror against what the message store wrote.
func RouteMirror(t *testing.T, fresh func(t *testing.T) MirrorFixture) {
	ctx := context.Background()
	// Topics in monthA: grp_1, grp_3, p2p_1_2; in monthB: grp_1, grp_2.
	fill := func(t *testing.T, f MirrorFixture) {
		t.Helper()
		writable(t, f.Shards, f.Tenant, monthA)
		writable(t, f.Shards, f.Tenant, monthB)
		id := int64(5000)
		write := func(topic string, m month.Month, seqs ...int64) {
			for _, s := range seqs {
				id++
				mustAppend(t, f.Store, f.Tenant, newMessage(topic, s, id, m), ports.Stored)
			}
		}
		write("grp_1", monthA, 1, 2, 3)
		write("grp_3", monthA, 1)
		write("p2p_1_2", monthA, 1, 2)
		write("grp_1", monthB, 4, 5)
		write("grp_2", monthB, 1)
	}
	t.Run("topics page by key", func(t *testing.T) {
		f := fresh(t)
		fill(t, f)
		var all []string
		after := ""
		for {
			got, err := f.Mirror.Topics(ctx, f.Tenant, after, 2)
			if err != nil {
				t.Fatalf("Topics after %q: %v", after, err)
			}
			all = append(all, got...)
			if len(got) < 2 {
				break
			}
			after = got[len(got)-1]
		}
		if want := []string{"grp_1", "grp_2", "grp_3", "p2p_1_2"}; !slices.Equal(all, want) {
			t.Fatalf("Topics = %v, want %v", all, want)
		}
		if got, err := f.Mirror.TopicsIn(ctx, f.Tenant, monthA, "", 10); err != nil || !slices.Equal(got, []string{"grp_1", "grp_3", "p2p_1_2"}) {
			t.Fatalf("TopicsIn %s = %v, %v", monthA, got, err)
		}
		if got, err := f.Mirror.TopicsIn(ctx, f.Tenant, monthB, "grp_1", 10); err != nil || !slices.Equal(got, []string{"grp_2"}) {
			t.Fatalf("TopicsIn %s after grp_1 = %v, %v", monthB, got, err)
		}
		if got, err := f.Mirror.Topics(ctx, f.Tenant, "", 0); err != nil || len(got) != 0 {
			t.Fatalf("Topics with limit 0 = %v, %v", got, err)
		}
		if _, err := f.Mirror.TopicsIn(ctx, f.Tenant, 203013, "", 10); err == nil {
			t.Fatal("TopicsIn of an invalid month succeeded")
		}
		// Newest messages in monthA: grp_1 at minute 3, p2p_1_2 at 2, grp_3 at 1.
		since := newMessage("", 2, 0, monthA).CreatedAt
		for _, c := range []struct {
			name  string
			m     month.Month
			since time.Time
			after string
			want  []string
		}{
			{"newest at or after since", monthA, since, "", []string{"grp_1", "p2p_1_2"}},
			{"after a topic", monthA, since, "grp_1", []string{"p2p_1_2"}},
			{"a millisecond later", monthA, since.Add(time.Millisecond), "", []string{"grp_1"}},
			{"none so new", monthA, since.Add(time.Hour), "", nil},
			{"another month", monthB, monthB.Start(), "", []string{"grp_1", "grp_2"}},
		} {
			if got, err := f.Mirror.TopicsSince(ctx, f.Tenant, c.m, c.since, c.after, 10); err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("TopicsSince %s: %v, %v, want %v", c.name, got, err, c.want)
			}
		}
		if _, err := f.Mirror.TopicsSince(ctx, f.Tenant, 203013, since, "", 10); err == nil {
			t.Fatal("TopicsSince of an invalid month succeeded")
		}
	})
	t.Run("table segment reads the month table", func(t *testing.T) {
		f := fresh(t)
		fill(t, f)
		seg, found, err := f.Mirror.TableSegment(ctx, f.Tenant, monthA, "grp_1")
		first, last := newMessage("grp_1", 1, 0, monthA).CreatedAt, newMessage("grp_1", 3, 0, monthA).CreatedAt
		if err != nil || !found || seg.Month != monthA || seg.MinSeq != 1 || seg.MaxSeq != 3 || seg.Count != 3 ||
			!seg.MinCreatedAt.Equal(first) || !seg.MaxCreatedAt.Equal(last) {
			t.Fatalf("TableSegment = %+v, %v, %v", seg, found, err)
		}
		if _, found, err := f.Mirror.TableSegment(ctx, f.Tenant, monthB, "grp_3"); err != nil || found {
			t.Fatalf("TableSegment of a topic absent from the month = %v, %v", found, err)
		}
		if _, _, err := f.Mirror.TableSegment(ctx, f.Tenant, 203012, "grp_1"); !errors.Is(err, shard.ErrMonthMissing) {
			t.Fatalf("TableSegment of an unregistered month: %v, want shard.ErrMonthMissing", err)
		}
	})
	t.Run("recount writes what the table holds", func(t *testing.T) {
		f := fresh(t)
		fill(t, f)
		seg, found, err := f.Mirror.Recount(ctx, f.Tenant, monthA, "grp_1")
		if err != nil || !found || seg.MinSeq != 1 || seg.MaxSeq != 3 || seg.Count != 3 {
			t.Fatalf("Recount = %+v, %v, %v", seg, found, err)
		}
		wantRoute(t, f.Store, f.Tenant, "grp_1", segment{monthA, 1, 3, 3}, segment{monthB, 4, 5, 2})
		if _, found, err := f.Mirror.Recount(ctx, f.Tenant, monthB, "grp_3"); err != nil || found {
			t.Fatalf("Recount of a topic absent from the month = %v, %v", found, err)
		}
		wantRoute(t, f.Store, f.Tenant, "grp_3", segment{monthA, 1, 1, 1})
		// Writes after a recount still add up.
		mustAppend(t, f.Store, f.Tenant, newMessage("grp_1", 6, 9001, monthB), ports.Stored)
		wantRoute(t, f.Store, f.Tenant, "grp_1", segment{monthA, 1, 3, 3}, segment{monthB, 4, 6, 3})
	})
}

// ShardHousekeeping checks ports.ShardHousekeeping.
func ShardHousekeeping(t *testing.T, fresh func(t *testing.T) MirrorFixture) {
	ctx := context.Background()
	t.Run("expired dedup records go in batches, oldest first", func(t *testing.T) {
		f := fresh(t)
		writable(t, f.Shards, f.Tenant, monthA)
		for i := range 5 {
			mustAppend(t, f.Store, f.Tenant, newMessage("grp_1", int64(i+1), int64(100+i), monthA), ports.Stored)
		}
		if n, err := f.Housekeeping.PurgeExpiredDedup(ctx, f.Tenant, time.Now(), 10); err != nil || n != 0 {
			t.Fatalf("purge before expiry = %d, %v; want 0", n, err)
		}
		// Records live at most 30 days (seed 000 §3.5).
		later := time.Now().Add(31 * 24 * time.Hour)
		var got []int64
		for {
			n, err := f.Housekeeping.PurgeExpiredDedup(ctx, f.Tenant, later, 2)
			if err != nil {
				t.Fatalf("purge: %v", err)
			}
			got = append(got, n)
			if n == 0 {
				break
			}
		}
		if fmt.Sprint(got) != "[2 2 1 0]" {
			t.Fatalf("purges deleted %v, want [2 2 1 0]", got)
		}
	})
	t.Run("statistics refresh of registered months only", func(t *testing.T) {
		f := fresh(t)
		writable(t, f.Shards, f.Tenant, monthA)
		mustAppend(t, f.Store, f.Tenant, newMessage("grp_1", 1, 100, monthA), ports.Stored)
		if err := f.Housekeeping.RefreshStats(ctx, f.Tenant, monthA); err != nil {
			t.Fatalf("RefreshStats: %v", err)
		}
		if err := f.Housekeeping.RefreshStats(ctx, f.Tenant, monthB); !errors.Is(err, shard.ErrMonthMissing) {
			t.Fatalf("RefreshStats of an unregistered month: %v, want shard.ErrMonthMissing", err)
		}
		if err := f.Housekeeping.RefreshStats(ctx, f.Tenant, 203013); err == nil {
			t.Fatal("RefreshStats of an invalid month succeeded")
		}
	})
}
