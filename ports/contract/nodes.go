package contract

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/ports"
)

// NodesFixture is one fresh tenant of a node registry (DESIGN §11) and a deliver queue with
// two partitions whose leases it hands out. Leases run on real time: the suite sleeps past
// short ones.
type NodesFixture struct {
	Tenant   string
	Leases   ports.NodeLeases
	Presence ports.Presence
	Channel  ports.NodeChannel
	Queue    ports.DeliverQueue // two partitions
	Deliver  ports.DeliverLeases
	Inspect  ports.NodeInspector
	Holders  ports.DeliverLeaseHolders
}

// Nodes checks ports.NodeLeases, ports.Presence, ports.NodeChannel, ports.DeliverLeases,
// ports.NodeInspector and ports.DeliverLeaseHolders.
func Nodes(t *testing.T, fresh func(t *testing.T) NodesFixture) {
	t.Run("a node's entries are those that name it", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		ctx := t.Context()
		if got, err := f.Presence.Entries(ctx, f.Tenant, "1-aa"); err != nil || len(got) != 0 {
			t.Fatalf("a fresh tenant: %+v, %v", got, err)
		}
		kept := presence.Entry{User: 5, Device: 1, Node: "1-aa", Token: 1}
		released := presence.Entry{User: 5, Device: 2, Node: "1-aa", Token: 2}
		moved := presence.Entry{User: 6, Device: 1, Node: "1-aa", Token: 3}
		for _, e := range []presence.Entry{kept, released, moved, {User: 6, Device: 1, Node: "2-bb", Token: 4}} {
			if _, _, err := f.Presence.Claim(ctx, f.Tenant, e); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Presence.Release(ctx, f.Tenant, released); err != nil {
			t.Fatal(err)
		}
		got, err := f.Presence.Entries(ctx, f.Tenant, "1-aa")
		if err != nil || len(got) != 1 || got[0] != kept {
			t.Fatalf("entries of 1-aa: %+v, %v; want only %+v (one released, one claimed since by 2-bb)", got, err, kept)
		}
	})
	t.Run("the registry is whole only when no loss is healing", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		ctx := t.Context()
		// A lease long enough that a step's round trips on a busy box stay well inside the
		// quarter lease the steps leave as margin (150 ms was not, under the suite's load).
		const ttl = 2 * time.Second
		whole := func(want bool, step string) {
			t.Helper()
			if _, got, err := f.Presence.LookupWhole(ctx, f.Tenant, nil); err != nil || got != want {
				t.Fatalf("%s: whole %v, %v; want %v", step, got, err, want)
			}
		}
		mend := func(known, owes, want bool, step string) {
			t.Helper()
			if got, err := f.Leases.Mend(ctx, f.Tenant, ttl, known, owes); err != nil || got != want {
				t.Fatalf("%s: mend answered %v, %v; want %v", step, got, err, want)
			}
			whole(want, step)
		}
		whole(false, "never mended")
		mend(true, false, false, "a known node finds no mark: a heal starts")
		time.Sleep(2 * ttl)
		mend(true, false, true, "a lease after, whole")
		mend(false, false, true, "whole stays whole")
		mend(true, true, false, "a node owes a restore")
		time.Sleep(ttl / 2)
		mend(true, true, false, "it owes again: the heal runs a lease from now")
		time.Sleep(3 * ttl / 4)
		mend(true, false, false, "less than a lease after the last debt")
		time.Sleep(ttl / 2)
		mend(false, false, true, "a lease after the last debt")

		g := fresh(t)
		if got, err := g.Leases.Mend(ctx, g.Tenant, ttl, false, false); err != nil || !got {
			t.Fatalf("a new node on a new tenant: whole %v, %v", got, err)
		}
	})
	t.Run("live nodes show their devices, backlog and partitions", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		ctx := t.Context()
		if got, err := f.Inspect.LiveNodes(ctx, f.Tenant); err != nil || len(got) != 0 {
			t.Fatalf("a fresh tenant lists nodes %+v, %v", got, err)
		}
		if got, err := f.Holders.Holders(ctx, f.Tenant); err != nil || !slices.Equal(got, []string{"", ""}) {
			t.Fatalf("a fresh tenant's partitions are held: %q, %v", got, err)
		}
		before := time.Now()
		mustRenew(t, f, "2-bb", time.Minute)
		mustRenew(t, f, "1-aa", time.Minute)
		mustRenew(t, f, "3-cc", 50*time.Millisecond)
		for _, e := range []presence.Entry{{User: 5, Device: 1, Node: "1-aa", Token: 1}, {User: 5, Device: 2, Node: "1-aa", Token: 2}, {User: 6, Device: 1, Node: "2-bb", Token: 3}} {
			if _, _, err := f.Presence.Claim(ctx, f.Tenant, e); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.Channel.Send(ctx, f.Tenant, "2-bb", 10, []byte("x"), []byte("y")); err != nil {
			t.Fatal(err)
		}
		if held, _, err := f.Deliver.Hold(ctx, f.Tenant, 1, "2-bb", time.Minute); err != nil || !held {
			t.Fatalf("hold: %v %v", held, err)
		}
		time.Sleep(100 * time.Millisecond)
		got, err := f.Inspect.LiveNodes(ctx, f.Tenant)
		if err != nil {
			t.Fatal(err)
		}
		want := []ports.NodeStatus{{Node: "1-aa", Devices: 2}, {Node: "2-bb", Devices: 1, Backlog: 2}}
		if len(got) != len(want) {
			t.Fatalf("live nodes %+v; want %+v", got, want)
		}
		for i, g := range got {
			if g.Node != want[i].Node || g.Devices != want[i].Devices || g.Backlog != want[i].Backlog {
				t.Errorf("node %d: %+v; want %+v", i, g, want[i])
			}
			if g.LeaseUntil.Before(before.Add(30*time.Second)) || g.LeaseUntil.After(time.Now().Add(2*time.Minute)) {
				t.Errorf("node %s: lease until %v, renewed for a minute at %v", g.Node, g.LeaseUntil, before)
			}
		}
		if got, err := f.Holders.Holders(ctx, f.Tenant); err != nil || !slices.Equal(got, []string{"", "2-bb"}) {
			t.Fatalf("partition holders %q, %v; want [\"\" 2-bb]", got, err)
		}
	})
	t.Run("an expired lease is reported, a retired node leaves nothing", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		ctx := t.Context()
		mustRenew(t, f, "1-aa", time.Second)
		mustRenew(t, f, "2-bb", 50*time.Millisecond)
		if _, _, err := f.Presence.Claim(ctx, f.Tenant, presence.Entry{User: 5, Device: 1, Node: "2-bb", Token: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Channel.Send(ctx, f.Tenant, "2-bb", 10, []byte("x")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		live, expired := mustRenew(t, f, "1-aa", time.Second)
		if !slices.Equal(live, []string{"1-aa"}) || !slices.Equal(expired, []string{"2-bb"}) {
			t.Fatalf("live %v expired %v", live, expired)
		}
		for i := range 2 { // twice: harmless, and only the first removed the user
			users, err := f.Leases.Retire(ctx, f.Tenant, "2-bb")
			if err != nil {
				t.Fatal(err)
			}
			if want := []int64{5}; i == 0 && !slices.Equal(users, want) || i == 1 && len(users) != 0 {
				t.Fatalf("retire #%d removed users %v", i+1, users)
			}
		}
		if got, err := f.Presence.Lookup(ctx, f.Tenant, []int64{5}); err != nil || len(got) != 0 {
			t.Fatalf("a retired node's presence is left: %+v %v", got, err)
		}
		if got, err := f.Channel.Receive(ctx, f.Tenant, "2-bb", "", 10, 10*time.Millisecond); err != nil || len(got) != 0 {
			t.Fatalf("a retired node's channel is left: %d entries, %v", len(got), err)
		}
		if live, expired := mustRenew(t, f, "1-aa", time.Second); len(live) != 1 || len(expired) != 0 {
			t.Fatalf("after retire: live %v expired %v", live, expired)
		}
		if _, _, _, err := f.Leases.Renew(ctx, f.Tenant, "bad{node}", time.Second); err == nil {
			t.Fatal("a node name with a brace was accepted")
		}
	})

	t.Run("a lapsed lease is reported; a restore fills only vacant devices", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		ctx := t.Context()
		// A lease of a second: the second renewal must come within it on a busy box too.
		for i, want := range []bool{true, false} { // the first renewal, then one within the lease
			if _, _, lapsed := mustRenewLapsed(t, f, "1-aa", time.Second); lapsed != want {
				t.Fatalf("renewal #%d: lapsed %v, want %v", i+1, lapsed, want)
			}
		}
		time.Sleep(1200 * time.Millisecond)
		if _, _, lapsed := mustRenewLapsed(t, f, "1-aa", time.Minute); !lapsed {
			t.Fatal("a renewal after the lease ran out is not reported lapsed")
		}
		if _, err := f.Leases.Retire(ctx, f.Tenant, "1-aa"); err != nil {
			t.Fatal(err)
		}
		if _, _, lapsed := mustRenewLapsed(t, f, "1-aa", time.Minute); !lapsed {
			t.Fatal("a renewal after a retirement is not reported lapsed")
		}
		moved := presence.Entry{User: 7, Device: 2, Node: "2-bb", Token: 9} // claimed elsewhere meanwhile
		if _, _, err := f.Presence.Claim(ctx, f.Tenant, moved); err != nil {
			t.Fatal(err)
		}
		held := []presence.Entry{{User: 7, Device: 1, Node: "1-aa", Token: 3}, {User: 7, Device: 2, Node: "1-aa", Token: 4}, {User: 8, Device: 1, Node: "1-aa", Token: 5}}
		for i, want := range []int{2, 0} { // twice: the second finds every device taken
			if n, err := f.Presence.Restore(ctx, f.Tenant, held); err != nil || n != want {
				t.Fatalf("restore #%d: %d, %v; want %d", i+1, n, err, want)
			}
		}
		got, err := f.Presence.Lookup(ctx, f.Tenant, []int64{7, 8})
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b presence.Entry) int {
			return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Device, b.Device))
		})
		if want := []presence.Entry{held[0], moved, held[2]}; !slices.Equal(got, want) {
			t.Fatalf("after restore: %+v; want %+v", got, want)
		}
		// Restored entries belong to the node: its retirement removes them.
		if users, err := f.Leases.Retire(ctx, f.Tenant, "1-aa"); err != nil || !slices.Equal(users, []int64{7, 8}) {
			t.Fatalf("retire after restore removed %v, %v; want 7, 8", users, err)
		}
		if got, err := f.Presence.Lookup(ctx, f.Tenant, []int64{7, 8}); err != nil || len(got) != 1 || got[0] != moved {
			t.Fatalf("after retire: %+v, %v; want only %+v", got, err, moved)
		}
	})

	t.Run("a lookup with the mark answers the entries and whether the registry is whole", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		ctx := t.Context()
		e := presence.Entry{User: 12, Device: 1, Node: "1-aa", Token: 6}
		if _, _, err := f.Presence.Claim(ctx, f.Tenant, e); err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			name  string
			mend  bool
			whole bool
		}{{"never mended", false, false}, {"mended by a new node", true, true}} {
			if step.mend {
				if _, err := f.Leases.Mend(ctx, f.Tenant, time.Second, false, false); err != nil {
					t.Fatal(err)
				}
			}
			got, whole, err := f.Presence.LookupWhole(ctx, f.Tenant, []int64{12, 13})
			if err != nil || whole != step.whole || !slices.Equal(got, []presence.Entry{e}) {
				t.Fatalf("%s: %+v, whole %v, %v; want %+v, whole %v", step.name, got, whole, err, e, step.whole)
			}
		}
	})

	t.Run("a claim answers what it replaced; a release only removes its own", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		ctx := t.Context()
		first := presence.Entry{User: 9, Device: 1, Node: "1-aa", Token: 4}
		if _, found, err := f.Presence.Claim(ctx, f.Tenant, first); err != nil || found {
			t.Fatalf("first claim: found %v err %v", found, err)
		}
		second := presence.Entry{User: 9, Device: 1, Node: "2-bb", Token: 1}
		if prev, found, err := f.Presence.Claim(ctx, f.Tenant, second); err != nil || !found || prev != first {
			t.Fatalf("second claim replaced %+v (found %v, err %v), want %+v", prev, found, err, first)
		}
		if err := f.Presence.Release(ctx, f.Tenant, first); err != nil {
			t.Fatal(err)
		}
		other := presence.Entry{User: 9, Device: 2, Node: "1-aa", Token: 5}
		gone := presence.Entry{User: 10, Device: 1, Node: "1-aa", Token: 6}
		for _, e := range []presence.Entry{other, gone} {
			if _, _, err := f.Presence.Claim(ctx, f.Tenant, e); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Presence.Release(ctx, f.Tenant, gone); err != nil {
			t.Fatal(err)
		}
		got, err := f.Presence.Lookup(ctx, f.Tenant, []int64{9, 10, 11})
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b presence.Entry) int { return int(a.Device) - int(b.Device) })
		if !slices.Equal(got, []presence.Entry{second, other}) {
			t.Fatalf("lookup %+v", got)
		}
	})

	t.Run("a channel keeps order and refuses more past its limit", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		ctx := t.Context()
		const limit = 3
		for i := range limit {
			if sent, err := f.Channel.Send(ctx, f.Tenant, "1-aa", limit, []byte(fmt.Sprint(i))); err != nil || !sent {
				t.Fatalf("send %d: %v %v", i, sent, err)
			}
		}
		if sent, err := f.Channel.Send(ctx, f.Tenant, "1-aa", limit, []byte("over")); err != nil || sent {
			t.Fatalf("a full channel took more: %v %v", sent, err)
		}
		msgs, err := f.Channel.Receive(ctx, f.Tenant, "1-aa", "", 10, 10*time.Millisecond)
		if err != nil || len(msgs) != limit {
			t.Fatalf("received %d: %v", len(msgs), err)
		}
		var ids []string
		for i, m := range msgs {
			if string(m.Body) != fmt.Sprint(i) {
				t.Fatalf("entry %d is %q", i, m.Body)
			}
			ids = append(ids, m.ID)
		}
		if more, err := f.Channel.Receive(ctx, f.Tenant, "1-aa", ids[len(ids)-1], 10, 10*time.Millisecond); err != nil || len(more) != 0 {
			t.Fatalf("after the cursor: %d entries, %v", len(more), err)
		}
		if err := f.Channel.Remove(ctx, f.Tenant, "1-aa", ids...); err != nil {
			t.Fatal(err)
		}
		if sent, err := f.Channel.Send(ctx, f.Tenant, "1-aa", limit, []byte("a"), []byte("b")); err != nil || !sent {
			t.Fatalf("a drained channel refused: %v %v", sent, err)
		}
		// A blocked reader wakes for a send.
		got := make(chan []ports.NodeMessage, 1)
		go func() {
			m, _ := f.Channel.Receive(ctx, f.Tenant, "2-bb", "", 10, 5*time.Second)
			got <- m
		}()
		time.Sleep(50 * time.Millisecond)
		if _, err := f.Channel.Send(ctx, f.Tenant, "2-bb", limit, []byte("late")); err != nil {
			t.Fatal(err)
		}
		if m := <-got; len(m) != 1 || string(m[0].Body) != "late" {
			t.Fatalf("waiting reader got %v", m)
		}
	})

	t.Run("a partition lease moves the dead holder's jobs back, in order", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		ctx := t.Context()
		topic := "grp_1"
		p := delivery.PartitionOf(topic, f.Queue.Partitions())
		hold := func(node string, ttl time.Duration) (bool, bool) {
			held, fresh, err := f.Deliver.Hold(ctx, f.Tenant, p, node, ttl)
			if err != nil {
				t.Fatal(err)
			}
			return held, fresh
		}
		// The lease is a second: the steps until the takeover must fit in it on a busy box too.
		if held, fresh := hold("1-aa", time.Second); !held || !fresh {
			t.Fatalf("first hold: %v %v", held, fresh)
		}
		for i := range 3 {
			if err := f.Queue.Push(ctx, delivery.Job{Tenant: f.Tenant, Kind: delivery.KindRead, MsgID: int64(i + 1), Topic: topic}); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok, err := f.Queue.Take(ctx, f.Tenant, p, 0); !ok || err != nil {
			t.Fatalf("take: %v %v", ok, err)
		}
		if held, _ := hold("2-bb", time.Second); held {
			t.Fatal("another node took a held lease")
		}
		if held, fresh := hold("1-aa", time.Second); !held || fresh {
			t.Fatalf("renewal: held %v fresh %v", held, fresh)
		}
		time.Sleep(1200 * time.Millisecond)
		if held, fresh := hold("2-bb", time.Second); !held || !fresh {
			t.Fatalf("takeover after expiry: %v %v", held, fresh)
		}
		for want := int64(1); want <= 3; want++ {
			job, ok, err := f.Queue.Take(ctx, f.Tenant, p, 0)
			if !ok || err != nil || job.MsgID != want {
				t.Fatalf("take after takeover: %+v %v %v, want msg %d", job, ok, err, want)
			}
		}
		if held, fresh := hold("2-cc", time.Second); !held || !fresh {
			t.Fatal("a restarted node (same node_id) waited for its own earlier lease")
		}
		if err := f.Deliver.Release(ctx, f.Tenant, p, "2-bb"); err != nil {
			t.Fatal(err)
		}
		if held, _ := hold("1-aa", time.Second); held {
			t.Fatal("a release by a former holder freed the lease")
		}
		if err := f.Deliver.Release(ctx, f.Tenant, p, "2-cc"); err != nil {
			t.Fatal(err)
		}
		if held, _ := hold("1-aa", time.Second); !held {
			t.Fatal("a released lease stayed taken")
		}
	})
}

func mustRenew(t *testing.T, f NodesFixture, node string, ttl time.Duration) (live, expired []string) {
	t.Helper()
	live, expired, _ = mustRenewLapsed(t, f, node, ttl)
	return live, expired
}

func mustRenewLapsed(t *testing.T, f NodesFixture, node string, ttl time.Duration) (live, expired []string, lapsed bool) {
	t.Helper()
	live, expired, lapsed, err := f.Leases.Renew(t.Context(), f.Tenant, node, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return live, expired, lapsed
}
