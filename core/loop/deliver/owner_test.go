package deliver

import (
	"context"
	"testing"
	"time"
)

// owner is a deliver.Owner holding a fixed set of partitions.
type owner struct {
	held    map[int]bool
	surplus map[int]bool
	alone   bool
	yielded []int
}

func (o *owner) Holds(_ string, p int) bool   { return o.held[p] }
func (o *owner) Surplus(_ string, p int) bool { return o.surplus[p] }
func (o *owner) Alone(string) bool            { return o.alone }
func (o *owner) Yield(_ context.Context, _ string, p int) {
	o.held[p], o.surplus[p] = false, false
	o.yielded = append(o.yielded, p)
}

func TestReorderWaitCoversSendsOnOtherNodes(t *testing.T) {
	cfg := Config{ReorderWait: 200 * time.Millisecond, SendBound: 12 * time.Second}
	for _, tt := range []struct {
		name  string
		owner Owner
		want  time.Duration
	}{
		{"one node, no owner", nil, 200 * time.Millisecond},
		{"alone", &owner{alone: true}, 200 * time.Millisecond},
		{"other nodes send too", &owner{}, 12 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := New(cfg, Deps{Owner: tt.owner})
			if got := w.reorderWait(tenant); got != tt.want {
				t.Fatalf("wait %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConsumerTakesOnlyHeldPartitionsAndYieldsWhenIdle(t *testing.T) {
	f := newFixture(t)
	o := &owner{held: map[int]bool{0: true}, surplus: map[int]bool{}}
	w := f.newWorkers(Config{MaxAttempts: 3, DoneTTL: time.Minute}, f.queue)
	w.d.Owner = o
	order := newSequencer(time.Millisecond, maxHeldPerTopic)
	if !w.owns(t.Context(), tenant, 0, order) {
		t.Fatal("a held partition is not consumed")
	}
	if w.owns(t.Context(), tenant, 1, order) {
		t.Fatal("a partition another node holds is consumed")
	}
	// A surplus partition with a job held back is kept until the job is handled.
	f.clock.Set(sequencerStart)
	order.start("grp_10", 0, sequencerStart)
	held := f.messageJob()
	held.Message.Seq = 2
	held.QueuedAt = sequencerStart.UnixMilli()
	if out := order.add(held, sequencerStart); len(out) != 0 {
		t.Fatalf("seq 2 before seq 1 was not held: %v", labels(out))
	}
	o.surplus[0] = true
	if !w.owns(t.Context(), tenant, 0, order) || len(o.yielded) != 0 {
		t.Fatal("a partition was given back with a job held")
	}
	order.drain()
	if w.owns(t.Context(), tenant, 0, order) || len(o.yielded) != 1 {
		t.Fatalf("an idle surplus partition was kept (yielded %v)", o.yielded)
	}
}
