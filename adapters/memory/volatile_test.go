package memory

import (
	"context"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
)

// TestVolatileRollsBackAndLoses: a restore brings back exactly the snapshot (also a second
// time), and Lose leaves nothing.
func TestVolatileRollsBackAndLoses(t *testing.T) {
	ctx := context.Background()
	const topic = "grp_1"
	m := month.Month(202605)
	cases := []struct {
		name  string
		fake  func() Volatile
		write func(t *testing.T, v Volatile, n int) // writes the n-th change
		state func(t *testing.T, v Volatile) int    // how many changes it holds
	}{
		{
			name: "seq counter",
			fake: func() Volatile {
				ms := NewMonthState(time.Now)
				now := month.Of(time.Now())
				if err := ms.MarkReady(ctx, contractTenant, 0, now); err != nil {
					t.Fatal(err)
				}
				if _, err := ms.Advance(ctx, contractTenant, 0, now); err != nil {
					t.Fatal(err)
				}
				return NewSeqAllocator(ms, time.Now)
			},
			write: func(t *testing.T, v Volatile, n int) {
				s := v.(*SeqAllocator)
				if err := s.Reseed(ctx, contractTenant, topic, int64(n)); err != nil {
					t.Fatal(err)
				}
			},
			state: func(t *testing.T, v Volatile) int {
				a, err := v.(*SeqAllocator).Allocate(ctx, contractTenant, seq.Request{Topic: topic, From: 1, ClientMsgID: time.Now().String(), MsgID: 1})
				if err != nil {
					return 0
				}
				return int(a.Seq - 1) // the read allocates, but every check restores first
			},
		},
		{
			name: "deliver queue",
			fake: func() Volatile { return NewDeliverQueue(time.Now) },
			write: func(t *testing.T, v Volatile, n int) {
				if err := v.(*DeliverQueue).Push(ctx, delivery.Job{Tenant: contractTenant, Kind: delivery.KindMessage, MsgID: int64(n), Topic: topic}); err != nil {
					t.Fatal(err)
				}
			},
			state: func(t *testing.T, v Volatile) int { return v.(*DeliverQueue).Queued(contractTenant) },
		},
		{
			name: "active month",
			fake: func() Volatile { return NewMonthState(time.Now) },
			write: func(t *testing.T, v Volatile, n int) {
				s := v.(*MonthState)
				if err := s.MarkReady(ctx, contractTenant, 0, m.Add(n)); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Advance(ctx, contractTenant, 0, m.Add(n)); err != nil {
					t.Fatal(err)
				}
			},
			state: func(t *testing.T, v Volatile) int {
				active, ok, err := v.(*MonthState).Active(ctx, contractTenant)
				if err != nil || !ok {
					return 0
				}
				n := 0
				for m.Add(n) < active {
					n++
				}
				return n
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := c.fake()
			c.write(t, v, 1)
			c.write(t, v, 2)
			restore := v.Snapshot()
			c.write(t, v, 3)
			for range 2 {
				restore()
				if got := c.state(t, v); got != 2 {
					t.Fatalf("after restore: %d changes, want the 2 of the snapshot", got)
				}
			}
			v.Lose()
			if got := c.state(t, v); got != 0 {
				t.Fatalf("after Lose: %d changes, want none", got)
			}
		})
	}
}

// TestDeliverQueueSnapshotKeepsLeases: a restore brings the partition leases back with the
// jobs, as a Redis snapshot holds the lease keys.
func TestDeliverQueueSnapshotKeepsLeases(t *testing.T) {
	ctx := context.Background()
	q := NewDeliverQueue(time.Now)
	if held, _, err := q.Hold(ctx, contractTenant, 0, "1-aa", time.Minute); err != nil || !held {
		t.Fatalf("first hold: %v %v", held, err)
	}
	restore := q.Snapshot()
	if err := q.Release(ctx, contractTenant, 0, "1-aa"); err != nil {
		t.Fatal(err)
	}
	restore()
	if held, _, err := q.Hold(ctx, contractTenant, 0, "2-bb", time.Minute); err != nil || held {
		t.Fatalf("hold by another node after the restore: held %v, %v; want the restored lease to refuse it", held, err)
	}
}
