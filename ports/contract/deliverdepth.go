package contract

import (
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/ports"
)

// DeliverDepth checks ports.DeliverDepth on the queue of a DeliverFixture: per partition of
// the current split, what waits, what is taken, the head's age; and the dead letters.
func DeliverDepth(t *testing.T, fresh func(t *testing.T) DeliverFixture) {
	t.Run("an empty queue has no depth", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		q := f.split(t, 4)
		got := depthOf(t, q, f.Tenant)
		if len(got.Partitions) != 4 || got.Dead != 0 {
			t.Fatalf("Depth = %+v; want 4 empty partitions", got)
		}
		for i, p := range got.Partitions {
			if p != (delivery.PartitionDepth{}) {
				t.Errorf("partition %d = %+v; want empty", i, p)
			}
		}
	})

	t.Run("queued, taken and dead jobs are counted where they are", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		q := f.split(t, 4)
		before := time.Now().Add(-time.Second).UnixMilli()
		for n := range 3 {
			if err := q.Push(t.Context(), deliverJob(f.Tenant, n+1)); err != nil {
				t.Fatal(err)
			}
		}
		p := delivery.PartitionOf("grp_1", 4)
		taken := deliverTakeFrom(t, q, f.Tenant, p)

		got := depthOf(t, q, f.Tenant)
		for i, d := range got.Partitions {
			want := delivery.PartitionDepth{}
			if i == p {
				want = delivery.PartitionDepth{Queued: 2, Processing: 1, OldestQueuedAt: d.OldestQueuedAt}
				if d.OldestQueuedAt < before || d.OldestQueuedAt > time.Now().Add(time.Second).UnixMilli() {
					t.Errorf("oldest queued at %d; want about now", d.OldestQueuedAt)
				}
			}
			if d != want {
				t.Errorf("partition %d = %+v; want %+v", i, d, want)
			}
		}

		if dead, err := q.Retry(t.Context(), taken, 1); err != nil || !dead {
			t.Fatalf("Retry = %v, %v; want a dead letter", dead, err)
		}
		got = depthOf(t, q, f.Tenant)
		if d := got.Partitions[p]; d.Queued != 2 || d.Processing != 0 || got.Dead != 1 {
			t.Fatalf("after the dead letter: partition %+v, dead %d; want 2 queued, 0 taken, 1 dead", d, got.Dead)
		}
	})
}

func depthOf(t *testing.T, q ports.DeliverQueue, tenant string) delivery.QueueDepth {
	t.Helper()
	d, ok := q.(ports.DeliverDepth)
	if !ok {
		t.Fatalf("%T does not measure its depth", q)
	}
	got, err := d.Depth(t.Context(), tenant)
	if err != nil {
		t.Fatalf("Depth: %v", err)
	}
	return got
}
