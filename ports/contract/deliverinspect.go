package contract

import (
	"testing"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/ports"
)

// DeliverInspector checks ports.DeliverInspector on a queue of the DeliverQueue suite (the
// fixture's queue must implement both): depths follow pushes, takes and dead letters, and
// requeued dead letters come back once, attempts reset, behind the queued jobs.
func DeliverInspector(t *testing.T, fresh func(t *testing.T) DeliverFixture) {
	inspector := func(t *testing.T, f DeliverFixture) ports.DeliverInspector {
		t.Helper()
		in, ok := f.Queue.(ports.DeliverInspector)
		if !ok {
			t.Fatalf("%T is no ports.DeliverInspector", f.Queue)
		}
		return in
	}
	depths := func(t *testing.T, in ports.DeliverInspector, f DeliverFixture, queued, processing, dead int64) delivery.QueueDepth {
		t.Helper()
		d, err := in.Depth(t.Context(), f.Tenant)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Partitions) != f.Queue.Partitions() {
			t.Fatalf("Depth lists %d partitions, the queue has %d", len(d.Partitions), f.Queue.Partitions())
		}
		p := d.Partitions[0]
		if p.Queued != queued || p.Processing != processing || d.Dead != dead {
			t.Fatalf("Depth = %+v; want queued %d, processing %d, dead %d", d, queued, processing, dead)
		}
		if (p.OldestQueuedAt > 0) != (queued > 0) {
			t.Fatalf("oldest queued_at %d with %d queued", p.OldestQueuedAt, queued)
		}
		return d
	}

	t.Run("depths follow pushes, takes and dead letters; requeued dead letters come back once", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		in := inspector(t, f)
		depths(t, in, f, 0, 0, 0)
		jobs := deliverPushN(t, f, 3)
		taken := deliverTake(t, f)
		depths(t, in, f, 2, 1, 0)
		if dead, err := f.Queue.Retry(t.Context(), taken, 1); err != nil || !dead {
			t.Fatalf("Retry with 1 attempt = %v, %v; want dead", dead, err)
		}
		depths(t, in, f, 2, 0, 1)

		if n, err := in.RequeueDead(t.Context(), f.Tenant, 0); err != nil || n != 0 {
			t.Fatalf("RequeueDead(max 0) = %d, %v; want 0", n, err)
		}
		if n, err := in.RequeueDead(t.Context(), f.Tenant, 10); err != nil || n != 1 {
			t.Fatalf("RequeueDead = %d, %v; want 1", n, err)
		}
		depths(t, in, f, 3, 0, 0)
		if n, err := in.RequeueDead(t.Context(), f.Tenant, 10); err != nil || n != 0 {
			t.Fatalf("RequeueDead of nothing = %d, %v; want 0", n, err)
		}
		for _, want := range []delivery.Job{jobs[1], jobs[2], jobs[0]} {
			got := deliverTake(t, f)
			if got.Attempts != 0 {
				t.Fatalf("job %d comes back with %d attempts", got.MsgID, got.Attempts)
			}
			deliverSame(t, got, want)
		}
		deliverEmpty(t, f)
	})
}
