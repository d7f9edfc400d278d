package memory

import (
	"maps"
	"slices"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/route"
)

// Volatile is a fake that stands for Redis state, which unlike MySQL can be lost (a restart
// without persistence, FLUSHALL) or go back in time (a failover to a replica that missed the
// last writes). Simulations and fault tests use it to lose all or part of "Redis".
type Volatile interface {
	// Snapshot copies the state; restore puts that copy back, as often as it is called.
	Snapshot() (restore func())
	// Lose drops every tenant's state.
	Lose()
}

var (
	_ Volatile = (*MonthState)(nil)
	_ Volatile = (*SeqAllocator)(nil)
	_ Volatile = (*DeliverQueue)(nil)
	_ Volatile = (*RouteCache)(nil)
	_ Volatile = (*HotCache)(nil)
	_ Volatile = (*DialogStore)(nil)
	_ Volatile = (*RepairQueue)(nil)
	_ Volatile = (*Locks)(nil)
	_ Volatile = (*CompensationList)(nil)
)

// cloneMap copies a map whose values need copying themselves.
func cloneMap[K comparable, V any](m map[K]V, clone func(V) V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = clone(v)
	}
	return out
}

func cloneMonths(m map[string]*tenantMonths) map[string]*tenantMonths {
	return cloneMap(m, func(t *tenantMonths) *tenantMonths {
		return &tenantMonths{active: t.active, ready: maps.Clone(t.ready)}
	})
}

// Snapshot copies the active and ready months.
func (s *MonthState) Snapshot() func() {
	s.mu.Lock()
	saved := cloneMonths(s.tenants)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.tenants = cloneMonths(saved)
		s.mu.Unlock()
	}
}

// Lose forgets every active and ready month.
func (s *MonthState) Lose() {
	s.mu.Lock()
	s.tenants = map[string]*tenantMonths{}
	s.mu.Unlock()
}

// Snapshot copies the counters and idempotency records.
func (s *SeqAllocator) Snapshot() func() {
	s.mu.Lock()
	counters, records := maps.Clone(s.counters), maps.Clone(s.records)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.counters, s.records = maps.Clone(counters), maps.Clone(records)
		s.mu.Unlock()
	}
}

// Lose forgets every counter and record.
func (s *SeqAllocator) Lose() {
	s.mu.Lock()
	s.counters, s.records = map[tenantTopic]int64{}, map[idemKey]idemRecord{}
	s.mu.Unlock()
}

func cloneJobLists(m map[string]*jobLists) map[string]*jobLists {
	lists := func(l map[partitionKey][]string) map[partitionKey][]string { return cloneMap(l, slices.Clone) }
	return cloneMap(m, func(l *jobLists) *jobLists {
		return &jobLists{
			queues: lists(l.queues), processing: lists(l.processing), counts: maps.Clone(l.counts),
			dead: slices.Clone(l.dead), done: maps.Clone(l.done),
		}
	})
}

// Snapshot copies the queues, processing lists, dead letters and done markers of every
// partition count.
func (q *DeliverQueue) Snapshot() func() {
	q.s.mu.Lock()
	saved := cloneJobLists(q.s.tenants)
	q.s.mu.Unlock()
	return func() {
		q.s.mu.Lock()
		q.s.tenants = cloneJobLists(saved)
		q.s.wake()
		q.s.mu.Unlock()
	}
}

// Lose forgets every job and marker.
func (q *DeliverQueue) Lose() {
	q.s.mu.Lock()
	q.s.tenants = map[string]*jobLists{}
	q.s.mu.Unlock()
}

// Snapshot copies the routes.
func (c *RouteCache) Snapshot() func() {
	c.mu.Lock()
	saved := cloneMap(c.routes, slices.Clone[route.Route])
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.routes = cloneMap(saved, slices.Clone[route.Route])
		c.mu.Unlock()
	}
}

// Lose forgets every route.
func (c *RouteCache) Lose() {
	c.mu.Lock()
	c.routes = map[tenantTopic]route.Route{}
	c.mu.Unlock()
}

// cloneHot copies the topics; the encoded entries are never written after a Put, so they
// are shared.
func cloneHot(m map[tenantTopic]*hotTopic) map[tenantTopic]*hotTopic {
	return cloneMap(m, func(t *hotTopic) *hotTopic {
		return &hotTopic{entries: maps.Clone(t.entries), expires: t.expires}
	})
}

// Snapshot copies the cached messages.
func (h *HotCache) Snapshot() func() {
	h.mu.Lock()
	saved := cloneHot(h.topics)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		h.topics = cloneHot(saved)
		h.mu.Unlock()
	}
}

// Lose forgets every cached message.
func (h *HotCache) Lose() {
	h.mu.Lock()
	h.topics = map[tenantTopic]*hotTopic{}
	h.mu.Unlock()
}

func cloneUserLists(m map[string]*userLists) map[string]*userLists {
	return cloneMap(m, func(t *userLists) *userLists {
		return &userLists{
			lists: cloneMap(t.lists, func(l *lists) *lists {
				return &lists{
					unread: maps.Clone(l.unread), read: maps.Clone(l.read), counts: maps.Clone(l.counts),
					muted: maps.Clone(l.muted), pinned: maps.Clone(l.pinned), built: l.built,
				}
			}),
			markers: cloneMap(t.markers, func(s markerSet) markerSet {
				return markerSet{batches: maps.Clone(s.batches), expires: s.expires}
			}),
		}
	})
}

// Snapshot copies every list, count, marker and preview.
func (s *DialogStore) Snapshot() func() {
	s.mu.Lock()
	lists, previews := cloneUserLists(s.tenants), cloneMap(s.previews, maps.Clone)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.tenants, s.previews = cloneUserLists(lists), cloneMap(previews, maps.Clone)
		s.mu.Unlock()
	}
}

// Lose forgets every list, count, marker and preview.
func (s *DialogStore) Lose() {
	s.mu.Lock()
	s.tenants, s.previews = map[string]*userLists{}, map[string]map[int64]dialog.Preview{}
	s.mu.Unlock()
}

func cloneTickets(m map[string]*repairTickets) map[string]*repairTickets {
	return cloneMap(m, func(t *repairTickets) *repairTickets {
		return &repairTickets{version: t.version, topics: maps.Clone(t.topics), built: t.built}
	})
}

// Snapshot copies the tickets and the routes-built marker.
func (q *RepairQueue) Snapshot() func() {
	q.mu.Lock()
	saved := cloneTickets(q.tenants)
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		q.tenants = cloneTickets(saved)
		q.mu.Unlock()
	}
}

// Lose forgets every ticket and marker.
func (q *RepairQueue) Lose() {
	q.mu.Lock()
	q.tenants = map[string]*repairTickets{}
	q.mu.Unlock()
}

// Snapshot copies the leases; tokens issued later stay unique after a restore, like the
// random tokens of the Redis adapter.
func (l *Locks) Snapshot() func() {
	l.mu.Lock()
	saved := maps.Clone(l.leases)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.leases = maps.Clone(saved)
		l.mu.Unlock()
	}
}

// Lose forgets every lease.
func (l *Locks) Lose() {
	l.mu.Lock()
	l.leases = map[lockKey]lease{}
	l.mu.Unlock()
}

func cloneCompensations(m map[string]*compensations) map[string]*compensations {
	return cloneMap(m, func(c *compensations) *compensations {
		return &compensations{entries: slices.Clone(c.entries), ids: maps.Clone(c.ids)}
	})
}

// Snapshot copies the listed writes.
func (l *CompensationList) Snapshot() func() {
	l.mu.Lock()
	saved := cloneCompensations(l.tenants)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.tenants = cloneCompensations(saved)
		l.mu.Unlock()
	}
}

// Lose forgets every listed write.
func (l *CompensationList) Lose() {
	l.mu.Lock()
	l.tenants = map[string]*compensations{}
	l.mu.Unlock()
}
