package memory

import (
	"maps"
	"slices"
	"sync"

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

// part is one field of a fake's state to snapshot: called under the fake's lock, it saves a
// copy and returns what puts a fresh copy of it back, so that a restore can be run again.
type part func() (restore func())

func partOf[T any](field *T, clone func(T) T) part {
	return func() func() {
		saved := clone(*field)
		return func() { *field = clone(saved) }
	}
}

// snapshot is Volatile.Snapshot over the parts of a fake's state that mu guards.
func snapshot(mu *sync.Mutex, parts ...part) func() {
	mu.Lock()
	restores := make([]func(), len(parts))
	for i, p := range parts {
		restores[i] = p()
	}
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range restores {
			r()
		}
	}
}

// lose is Volatile.Lose of a fake whose state is one map.
func lose[K comparable, V any](mu *sync.Mutex, state map[K]V) {
	mu.Lock()
	clear(state)
	mu.Unlock()
}

// Snapshot copies the active and ready months and the scheduled switch.
func (s *MonthState) Snapshot() func() {
	return snapshot(&s.mu, partOf(&s.tenants, func(m map[tenantGroup]*tenantMonths) map[tenantGroup]*tenantMonths {
		return cloneMap(m, (*tenantMonths).clone)
	}))
}

// SnapshotGroup copies one slot group's active and ready months and scheduled switch; restore
// puts that copy back and leaves the other groups as they are then: a failover of the one
// master that holds the group's slot.
func (s *MonthState) SnapshotGroup(name string, group int) (restore func()) {
	g := tenantGroup{name, group}
	s.mu.Lock()
	saved, ok := s.tenants[g]
	if ok {
		saved = saved.clone()
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !ok {
			delete(s.tenants, g)
			return
		}
		s.tenants[g] = saved.clone()
	}
}

func (t *tenantMonths) clone() *tenantMonths {
	return &tenantMonths{active: t.active, ready: maps.Clone(t.ready), switchTo: t.switchTo, switchAt: t.switchAt}
}

// Lose forgets every active and ready month.
func (s *MonthState) Lose() { lose(&s.mu, s.tenants) }

// Snapshot copies the counters and idempotency records.
func (s *SeqAllocator) Snapshot() func() {
	return snapshot(&s.mu, partOf(&s.counters, maps.Clone), partOf(&s.records, maps.Clone))
}

// Lose forgets every counter and record.
func (s *SeqAllocator) Lose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.counters)
	clear(s.records)
}

// Snapshot copies the queues, processing lists, dead letters, done markers and partition
// leases of every partition count, and wakes the waiting Takes on a restore.
func (q *DeliverQueue) Snapshot() func() {
	lists := func(l map[partitionKey][]string) map[partitionKey][]string { return cloneMap(l, slices.Clone) }
	// Takes waiting on the lost jobs look again at the restored ones.
	wake := func() func() { return q.s.wake }
	return snapshot(&q.s.mu, partOf(&q.s.tenants, func(m map[string]*jobLists) map[string]*jobLists {
		return cloneMap(m, func(l *jobLists) *jobLists {
			return &jobLists{
				queues: lists(l.queues), processing: lists(l.processing),
				dead: slices.Clone(l.dead), done: maps.Clone(l.done), leases: maps.Clone(l.leases),
			}
		})
	}), wake)
}

// Lose forgets every job and marker.
func (q *DeliverQueue) Lose() { lose(&q.s.mu, q.s.tenants) }

// LosePartition forgets the jobs queued and taken in one partition of the tenant's queue (of
// this queue's partition count) and returns how many: a partial loss, the other partitions,
// the done markers and everything beside the queue intact (seed 003 §20 item 13).
func (q *DeliverQueue) LosePartition(tenant string, partition int) int {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l, ok := q.s.tenants[tenant]
	if !ok {
		return 0
	}
	k := partitionKey{partition, q.partitions}
	n := len(l.queues[k]) + len(l.processing[k])
	delete(l.queues, k)
	delete(l.processing, k)
	return n
}

// Snapshot copies the routes.
func (c *RouteCache) Snapshot() func() {
	return snapshot(&c.mu, partOf(&c.routes, func(m map[tenantTopic]route.Route) map[tenantTopic]route.Route {
		return cloneMap(m, slices.Clone[route.Route])
	}))
}

// Lose forgets every route.
func (c *RouteCache) Lose() { lose(&c.mu, c.routes) }

// Snapshot copies the cached messages; the encoded entries are never written after a Put, so
// they are shared.
func (h *HotCache) Snapshot() func() {
	return snapshot(&h.mu, partOf(&h.topics, func(m map[tenantTopic]*hotTopic) map[tenantTopic]*hotTopic {
		return cloneMap(m, func(t *hotTopic) *hotTopic { return &hotTopic{entries: maps.Clone(t.entries), expires: t.expires} })
	}))
}

// Lose forgets every cached message.
func (h *HotCache) Lose() { lose(&h.mu, h.topics) }

// Snapshot copies every list, count, marker, gap and preview.
func (s *DialogStore) Snapshot() func() {
	return snapshot(&s.mu, partOf(&s.tenants, func(m map[string]*userLists) map[string]*userLists {
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
				gaps: maps.Clone(t.gaps),
			}
		})
	}), partOf(&s.previews, func(m map[string]map[int64]dialog.Preview) map[string]map[int64]dialog.Preview {
		return cloneMap(m, maps.Clone)
	}))
}

// Lose forgets every list, count, marker, gap and preview.
func (s *DialogStore) Lose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tenants)
	clear(s.previews)
}

// Snapshot copies the tickets and the routes-built marker.
func (q *RepairQueue) Snapshot() func() {
	return snapshot(&q.mu, partOf(&q.tenants, func(m map[string]*repairTickets) map[string]*repairTickets {
		return cloneMap(m, func(t *repairTickets) *repairTickets {
			return &repairTickets{version: t.version, topics: maps.Clone(t.topics), built: t.built}
		})
	}))
}

// Lose forgets every ticket and marker.
func (q *RepairQueue) Lose() { lose(&q.mu, q.tenants) }

// Snapshot copies the leases; tokens issued later stay unique after a restore, like the
// random tokens of the Redis adapter.
func (l *Locks) Snapshot() func() { return snapshot(&l.mu, partOf(&l.leases, maps.Clone)) }

// Lose forgets every lease.
func (l *Locks) Lose() { lose(&l.mu, l.leases) }

// Snapshot copies the listed writes.
func (l *CompensationList) Snapshot() func() {
	return snapshot(&l.mu, partOf(&l.tenants, func(m map[string]*compensations) map[string]*compensations {
		return cloneMap(m, func(c *compensations) *compensations {
			return &compensations{entries: slices.Clone(c.entries), ids: maps.Clone(c.ids)}
		})
	}))
}

// Lose forgets every listed write.
func (l *CompensationList) Lose() { lose(&l.mu, l.tenants) }

// Lose forgets every lease, presence entry and channel: a Redis flush under running nodes
// (DESIGN §13 "After a registry loss").
func (n *Nodes) Lose() { lose(&n.mu, n.ts) }
