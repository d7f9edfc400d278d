package contract

import (
	"context"
	"errors"
	"testing"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// ShardStoreFactory returns a shard store and an empty tenant.
type ShardStoreFactory func(t *testing.T) (shards ports.ShardStore, tenant string)

// ShardStore runs the shard store contract (seed 000 §3.2, §4, §10). Row counts are checked by
// the MessageStore suite, which can write messages.
func ShardStore(t *testing.T, newStore ShardStoreFactory) {
	cases := []struct {
		name string
		run  func(t *testing.T, s ports.ShardStore, tenant string)
	}{
		{"ensure registers the month as prepared", ensureRegisters},
		{"ensure again keeps the state", ensureKeepsState},
		{"set state is a compare-and-set", setStateCAS},
		{"invalid months are rejected", invalidMonths},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, tenant := newStore(t)
			c.run(t, s, tenant)
		})
	}
}

func ensureRegisters(t *testing.T, s ports.ShardStore, tenant string) {
	ctx := context.Background()
	if got := catalog(t, s, tenant); len(got) != 0 {
		t.Fatalf("Catalog of a new tenant = %+v, want empty", got)
	}
	for _, m := range []month.Month{monthB, monthA} {
		if err := s.EnsureTable(ctx, tenant, m); err != nil {
			t.Fatalf("EnsureTable %s: %v", m, err)
		}
	}
	got := catalog(t, s, tenant)
	if len(got) != 2 {
		t.Fatalf("Catalog = %+v, want two months", got)
	}
	for i, m := range []month.Month{monthA, monthB} { // ascending, whatever the creation order
		table, _ := m.Table()
		if got[i].Month != m || got[i].Table != table || got[i].State != shard.Prepared || got[i].RowCount != 0 {
			t.Fatalf("Catalog[%d] = %+v, want %s (%s) prepared with 0 rows", i, got[i], m, table)
		}
	}
}

func ensureKeepsState(t *testing.T, s ports.ShardStore, tenant string) {
	ctx := context.Background()
	if err := s.EnsureTable(ctx, tenant, monthA); err != nil {
		t.Fatalf("EnsureTable: %v", err)
	}
	if err := s.SetState(ctx, tenant, monthA, shard.Prepared, shard.Writable); err != nil {
		t.Fatalf("SetState: %v", err)
	}
	if err := s.EnsureTable(ctx, tenant, monthA); err != nil {
		t.Fatalf("EnsureTable again: %v", err)
	}
	if got := catalog(t, s, tenant); len(got) != 1 || got[0].State != shard.Writable {
		t.Fatalf("Catalog = %+v, want one writable month", got)
	}
}

func setStateCAS(t *testing.T, s ports.ShardStore, tenant string) {
	ctx := context.Background()
	if err := s.SetState(ctx, tenant, monthA, shard.Prepared, shard.Writable); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("SetState of a missing month: err = %v, want shard.ErrMonthMissing", err)
	}
	if err := s.EnsureTable(ctx, tenant, monthA); err != nil {
		t.Fatalf("EnsureTable: %v", err)
	}
	steps := []struct {
		from, to shard.State
		ok       bool
	}{
		{shard.Writable, shard.Sealing, false}, // it is prepared
		{shard.Prepared, shard.Writable, true},
		{shard.Prepared, shard.Writable, false}, // a second node lost the race
		{shard.Writable, shard.Writable, true},  // already there
		{shard.Writable, shard.State("bogus"), false},
		{shard.Writable, shard.Sealing, true},
		{shard.Sealing, shard.Sealed, true},
		{shard.Sealed, shard.Archived, true},
	}
	for _, st := range steps {
		err := s.SetState(ctx, tenant, monthA, st.from, st.to)
		if (err == nil) != st.ok {
			t.Fatalf("SetState %s→%s: err = %v, want success %v", st.from, st.to, err, st.ok)
		}
	}
	if got := catalog(t, s, tenant); got[0].State != shard.Archived {
		t.Fatalf("state = %s, want archived", got[0].State)
	}
}

func invalidMonths(t *testing.T, s ports.ShardStore, tenant string) {
	ctx := context.Background()
	for _, m := range []month.Month{0, 203013, 99901, 1234567} {
		if err := s.EnsureTable(ctx, tenant, m); err == nil {
			t.Errorf("EnsureTable %d succeeded", int32(m))
		}
	}
	if got := catalog(t, s, tenant); len(got) != 0 {
		t.Fatalf("Catalog = %+v, want empty", got)
	}
}

func catalog(t *testing.T, s ports.ShardStore, tenant string) []shard.Info {
	t.Helper()
	got, err := s.Catalog(context.Background(), tenant)
	if err != nil {
		t.Fatalf("Catalog: %v", err)
	}
	return got
}
