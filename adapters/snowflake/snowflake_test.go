package snowflake

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestNewRejectsMachineIDOutOfRange(t *testing.T) {
	for _, id := range []int{-1, MaxMachineID + 1, 1 << 16} {
		if _, err := New(id); err == nil {
			t.Errorf("New(%d) succeeded, want an error", id)
		}
	}
}

func TestMachineIDDecomposes(t *testing.T) {
	for _, machine := range []int{0, 1, 517, MaxMachineID} {
		g, err := New(machine)
		if err != nil {
			t.Fatalf("New(%d): %v", machine, err)
		}
		id, err := g.NextID()
		if err != nil {
			t.Fatalf("NextID: %v", err)
		}
		if got := g.sf.Decompose(id)["machine"]; got != int64(machine) {
			t.Errorf("machine part of %d = %d, want %d", id, got, machine)
		}
	}
}

func TestNextIDIsMonotonic(t *testing.T) {
	g := newGenerator(t)
	var prev int64
	// More than one millisecond's worth of sequence, so the sequence wraps at least once.
	for i := range 3 * (1 << BitsSequence) {
		id, err := g.NextID()
		if err != nil {
			t.Fatalf("NextID: %v", err)
		}
		if id <= prev {
			t.Fatalf("id %d after %d at call %d: not increasing", id, prev, i)
		}
		prev = id
	}
}

func TestNextIDIsUniqueAcrossGoroutines(t *testing.T) {
	const workers, perWorker = 8, 100_000
	if testing.Short() {
		t.Skip("issues 800k ids")
	}
	g := newGenerator(t)
	ids := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			out := make([]int64, 0, perWorker)
			for range perWorker {
				id, err := g.NextID()
				if err != nil {
					t.Errorf("NextID: %v", err)
					return
				}
				out = append(out, id)
			}
			ids[w] = out
		})
	}
	wg.Wait()
	seen := make(map[int64]struct{}, workers*perWorker)
	for _, batch := range ids {
		for _, id := range batch {
			if _, dup := seen[id]; dup {
				t.Fatalf("id %d issued twice", id)
			}
			seen[id] = struct{}{}
		}
	}
	if len(seen) != workers*perWorker {
		t.Fatalf("got %d ids, want %d", len(seen), workers*perWorker)
	}
}

func TestTimeOfIsNow(t *testing.T) {
	g := newGenerator(t)
	before := time.Now().Truncate(TimeUnit)
	id, err := g.NextID()
	if err != nil {
		t.Fatalf("NextID: %v", err)
	}
	after := time.Now()
	if got := g.TimeOf(id); got.Before(before) || got.After(after.Add(5*time.Millisecond)) {
		t.Errorf("TimeOf = %s, want within [%s, %s+5ms]", got, before, after)
	}
}

func TestCheckClock(t *testing.T) {
	g := newGenerator(t)
	idAt := func(at time.Time) int64 {
		id, err := g.sf.Compose(at, 0, 1)
		if err != nil {
			t.Fatalf("Compose: %v", err)
		}
		return id
	}
	tests := []struct {
		name   string
		lastID int64
		want   error
	}{
		{"no id issued yet", 0, nil},
		{"last id in the past", idAt(time.Now().Add(-time.Hour)), nil},
		{"last id just issued", mustNext(t, g), nil},
		{"last id in the future", idAt(time.Now().Add(time.Minute)), ErrClockBehind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := g.CheckClock(tt.lastID); !errors.Is(err, tt.want) {
				t.Errorf("CheckClock = %v, want %v", err, tt.want)
			}
		})
	}
}

func BenchmarkNextID(b *testing.B) {
	g, err := New(1)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := g.NextID(); err != nil {
			b.Fatal(err)
		}
	}
}

func newGenerator(t *testing.T) *Generator {
	t.Helper()
	g, err := New(7)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

func mustNext(t *testing.T, g *Generator) int64 {
	t.Helper()
	id, err := g.NextID()
	if err != nil {
		t.Fatalf("NextID: %v", err)
	}
	return id
}
