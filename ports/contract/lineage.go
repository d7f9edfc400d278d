package contract

import (
	"context"
	"testing"

	"github.com/imdhq/imd/ports"
)

// LineageFixture is a Redis lineage and what replaces its master.
type LineageFixture struct {
	Lineage ports.RedisLineage
	// Replace does to "Redis" what may lose the last writes it acknowledged: a replica
	// promoted, a master restarted (ports.RedisLineage).
	Replace func(t *testing.T)
}

// RedisLineage checks ports.RedisLineage: the same while nothing happens to the masters, a new
// one after each replacement, never one seen before.
func RedisLineage(t *testing.T, fresh func(t *testing.T) LineageFixture) {
	ctx := context.Background()
	read := func(t *testing.T, f LineageFixture) string {
		t.Helper()
		l, err := f.Lineage.Lineage(ctx)
		if err != nil {
			t.Fatalf("lineage: %v", err)
		}
		if l == "" {
			t.Fatal("lineage is empty")
		}
		return l
	}
	cases := []struct {
		name     string
		replaces int
	}{
		{"the same while nothing is replaced", 0},
		{"new after a replacement", 1},
		{"new after each of two replacements", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := fresh(t)
			seen := map[string]bool{read(t, f): true}
			for range c.replaces {
				f.Replace(t)
				l := read(t, f)
				if seen[l] {
					t.Fatalf("lineage %q after a replacement was seen before", l)
				}
				seen[l] = true
			}
			last := read(t, f)
			for range 2 {
				if l := read(t, f); l != last {
					t.Fatalf("lineage went from %q to %q with nothing replaced", last, l)
				}
			}
		})
	}
}
