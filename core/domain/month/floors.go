package month

import "sync"

// Floors remembers, per tenant, the newest month this process has seen the catalog make
// writable or the seq script allocate in: the least the active month may be. A Redis that
// rolled back its active month (a failover to a replica that missed a switch) is raised to it
// by the next allocation of this process, instead of allocating in the month before until a
// collision or the next shard pass repairs it (seed 000 §3.3: the month only moves forward).
// The zero value is ready; a nil *Floors knows no floor.
type Floors struct {
	mu sync.Mutex
	m  map[string]Month
}

// Raise makes m the tenant's floor when it is later than the floor known.
func (f *Floors) Raise(tenant string, m Month) {
	if f == nil || !m.Valid() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]Month{}
	}
	if m > f.m[tenant] {
		f.m[tenant] = m
	}
}

// Of is the tenant's floor, zero when none is known.
func (f *Floors) Of(tenant string) Month {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[tenant]
}
