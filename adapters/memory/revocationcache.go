package memory

import (
	"context"
	"sync"
	"time"

	"github.com/imdhq/imd/ports"
)

// RevocationCache is the in-memory ports.RevocationCache with the rules of the Redis one: fills
// write only missing entries, revocations overwrite, cut-offs never move back, entries expire
// on clock. Forget drops everything, as FLUSHALL does.
type RevocationCache struct {
	clock func() time.Time

	mu      sync.Mutex
	tokens  map[string]cachedEntry[bool]      // tenant\x00jti
	cutoffs map[string]cachedEntry[time.Time] // tenant\x00user
}

type cachedEntry[T any] struct {
	v       T
	expires time.Time
}

var _ ports.RevocationCache = (*RevocationCache)(nil)

// NewRevocationCache returns an empty cache whose entries expire on clock.
func NewRevocationCache(clock func() time.Time) *RevocationCache {
	return &RevocationCache{clock: clock, tokens: map[string]cachedEntry[bool]{}, cutoffs: map[string]cachedEntry[time.Time]{}}
}

// Cached reports both entries, found only when both are live.
func (c *RevocationCache) Cached(_ context.Context, tenant, tokenID string, user int64) (bool, time.Time, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	tok, ok1 := c.tokens[tenant+"\x00"+tokenID]
	cut, ok2 := c.cutoffs[userKey(tenant, user)]
	if !ok1 || !ok2 || !now.Before(tok.expires) || !now.Before(cut.expires) {
		return false, time.Time{}, false, nil
	}
	return tok.v, cut.v, true, nil
}

// Fill caches the answer where no live entry is.
func (c *RevocationCache) Fill(_ context.Context, tenant, tokenID string, user int64, revoked bool, cutoff time.Time, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	expires := now.Add(max(ttl, time.Millisecond))
	if e, ok := c.tokens[tenant+"\x00"+tokenID]; !ok || !now.Before(e.expires) {
		c.tokens[tenant+"\x00"+tokenID] = cachedEntry[bool]{v: revoked, expires: expires}
	}
	k := userKey(tenant, user)
	if e, ok := c.cutoffs[k]; !ok || !now.Before(e.expires) {
		c.cutoffs[k] = cachedEntry[time.Time]{v: cutoff.Truncate(time.Millisecond), expires: expires}
	}
	return nil
}

// RevokeToken caches a revocation until the token expires.
func (c *RevocationCache) RevokeToken(_ context.Context, tenant, tokenID string, expires time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if expires.After(c.clock()) {
		c.tokens[tenant+"\x00"+tokenID] = cachedEntry[bool]{v: true, expires: expires}
	}
	return nil
}

// RevokeUser raises the cached cut-off to at for ttl; it never moves back.
func (c *RevocationCache) RevokeUser(_ context.Context, tenant string, user int64, at time.Time, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	k := userKey(tenant, user)
	if e, ok := c.cutoffs[k]; !ok || !now.Before(e.expires) || at.After(e.v) {
		c.cutoffs[k] = cachedEntry[time.Time]{v: at.Truncate(time.Millisecond), expires: now.Add(max(ttl, time.Millisecond))}
	}
	return nil
}

// Forget drops every entry, as a Redis FLUSHALL would.
func (c *RevocationCache) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.tokens)
	clear(c.cutoffs)
}
