package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// shardCount spreads the lock of a Shared table so connections on different event loops
// rarely meet.
const shardCount = 64

// Shared is a bounded table of buckets by key, safe for concurrent use: the budgets one
// client address shares across all its connections. A key whose bucket has refilled is the
// same as an absent one, so Sweep drops such keys and the table holds only keys active
// within about one Per of their Rate.
//
// When a shard is full, inserting a new key evicts an arbitrary one. The table thus never
// grows past its bound, at the price of forgetting some budget when more distinct keys are
// active than it holds: under such a flood it fails open for the evicted keys rather than
// refusing everyone.
type Shared[K comparable] struct {
	seed     maphash.Seed
	perShard int
	shards   [shardCount]sharedShard[K]
}

type sharedShard[K comparable] struct {
	mu      sync.Mutex
	buckets map[K]Bucket
}

// NewShared returns a table holding up to about maxKeys keys.
func NewShared[K comparable](maxKeys int) *Shared[K] {
	s := &Shared[K]{seed: maphash.MakeSeed(), perShard: max(maxKeys/shardCount, 1)}
	for i := range s.shards {
		s.shards[i].buckets = make(map[K]Bucket)
	}
	return s
}

func (s *Shared[K]) shard(key K) *sharedShard[K] {
	return &s.shards[maphash.Comparable(s.seed, key)%shardCount]
}

// Allow spends one request of l from key's bucket at now.
func (s *Shared[K]) Allow(key K, l Limit, now time.Duration) bool {
	if l.Unlimited() {
		return true
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b, known := sh.buckets[key]
	if !b.Allow(l, now) {
		return false
	}
	if !known && len(sh.buckets) >= s.perShard {
		for victim := range sh.buckets {
			delete(sh.buckets, victim)
			break
		}
	}
	sh.buckets[key] = b
	return true
}

// Refund gives back the request the last successful Allow of key spent.
func (s *Shared[K]) Refund(key K, l Limit) {
	if l.Unlimited() {
		return
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if b, ok := sh.buckets[key]; ok {
		b.Refund(l)
		sh.buckets[key] = b
	}
}

// Sweep drops the keys whose buckets have refilled by now. Call it periodically, off any
// latency-sensitive path: it visits every key.
func (s *Shared[K]) Sweep(now time.Duration) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, b := range sh.buckets {
			if b.full(now) {
				delete(sh.buckets, k)
			}
		}
		sh.mu.Unlock()
	}
}
