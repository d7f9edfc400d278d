package membership

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// slowDirectory counts member reads and makes each take a while, as MySQL under load does.
type slowDirectory struct {
	ports.Directory
	reads atomic.Int64
}

func (d *slowDirectory) Members(ctx context.Context, tenant, topic string) ([]int64, error) {
	d.reads.Add(1)
	time.Sleep(20 * time.Millisecond)
	return d.Directory.Members(ctx, tenant, topic)
}

func TestMembers(t *testing.T) {
	ctx := context.Background()
	dir := memory.NewDirectory()
	for u := int64(1); u <= 3; u++ {
		if err := dir.CreateUser(ctx, "t1", social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dir.CreateGroup(ctx, "t1", social.Group{ID: 5, Owner: 3}, 500, []int64{2, 1}, 0); err != nil {
		t.Fatal(err)
	}
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	slow := &slowDirectory{Directory: dir}
	c := New(slow, clock, 5*time.Second)

	// An expired entry under concurrent load: one read, every caller served by it.
	for round := range 2 {
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				got, err := c.Members(ctx, "t1", "grp_5")
				if err != nil || !slices.Equal(got, []int64{1, 2, 3}) {
					t.Errorf("Members = %v, %v; want [1 2 3]", got, err)
				}
			})
		}
		wg.Wait()
		if n := slow.reads.Load(); n != int64(round+1) {
			t.Fatalf("round %d: %d member reads; want %d (one per expiry)", round, n, round+1)
		}
		clock.Advance(5 * time.Second)
	}
	if ok, err := c.IsMember(ctx, "t1", "grp_5", 2); err != nil || !ok {
		t.Fatalf("IsMember(2) = %v, %v", ok, err)
	}
	before := slow.reads.Load()
	c.Invalidate("t1", "grp_5")
	if _, err := c.Members(ctx, "t1", "grp_5"); err != nil || slow.reads.Load() != before+1 {
		t.Fatalf("after Invalidate: %d reads, %v; want a fresh read", slow.reads.Load()-before, err)
	}
}
