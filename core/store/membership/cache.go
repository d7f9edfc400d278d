// Package membership caches who is in a topic for a short time, so neither a send's permission
// check nor a fan-out reads the member table per message (seed 003 §12.2).
package membership

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/kit/singleflight"
	"github.com/imdhq/imd/ports"
)

type entry struct {
	members []int64 // sorted
	expires time.Time
}

// Cache is a TTL cache of topic members over the Directory.
type Cache struct {
	dir   ports.Directory
	clock ports.Clock
	ttl   time.Duration

	mu      sync.Mutex
	entries map[string]entry
	loads   singleflight.Group[[]int64] // one member read per topic at a time
}

// New returns a cache whose entries live ttl.
func New(dir ports.Directory, clock ports.Clock, ttl time.Duration) *Cache {
	return &Cache{dir: dir, clock: clock, ttl: ttl, entries: make(map[string]entry)}
}

func key(tenant, topic string) string { return tenant + "\x00" + topic }

// Members returns the sorted member ids of a topic. The slice is shared: callers must not modify it.
func (c *Cache) Members(ctx context.Context, tenant, topic string) ([]int64, error) {
	k := key(tenant, topic)
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.members, nil
	}
	return c.loads.Do(ctx, k, func(ctx context.Context) ([]int64, error) {
		members, err := c.dir.Members(ctx, tenant, topic)
		if err != nil {
			return nil, err
		}
		members = slices.Clone(members)
		slices.Sort(members)
		c.mu.Lock()
		if len(c.entries) > 100_000 {
			c.evictExpired(now)
		}
		c.entries[k] = entry{members: members, expires: now.Add(c.ttl)}
		c.mu.Unlock()
		return members, nil
	})
}

// IsMember answers from the cached member list.
func (c *Cache) IsMember(ctx context.Context, tenant, topic string, user int64) (bool, error) {
	members, err := c.Members(ctx, tenant, topic)
	if err != nil {
		return false, err
	}
	_, found := slices.BinarySearch(members, user)
	return found, nil
}

// Invalidate drops a topic after a membership change made through this process.
func (c *Cache) Invalidate(tenant, topic string) {
	c.mu.Lock()
	delete(c.entries, key(tenant, topic))
	c.mu.Unlock()
}

func (c *Cache) evictExpired(now time.Time) {
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
}
