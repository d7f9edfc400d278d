package memory

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// lockNameRE is the Redis adapter's rule for lock names.
var lockNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Locks is an in-memory ports.Locks; clock expires leases like Redis PX does.
type Locks struct {
	clock func() time.Time

	mu     sync.Mutex
	next   int64
	leases map[lockKey]lease
}

var _ ports.Locks = (*Locks)(nil)

type lockKey struct{ tenant, name string }

type lease struct {
	token   string
	expires time.Time
}

// NewLocks returns locks whose leases expire by clock.
func NewLocks(clock func() time.Time) *Locks {
	return &Locks{clock: clock, leases: map[lockKey]lease{}}
}

// Acquire takes the lease unless an unexpired one is held.
func (l *Locks) Acquire(_ context.Context, name, lock string, ttl time.Duration) (string, bool, error) {
	if !tenant.Valid(name) || !lockNameRE.MatchString(lock) {
		return "", false, fmt.Errorf("acquire lock: invalid tenant %q or lock %q", name, lock)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := lockKey{name, lock}
	now := l.clock()
	if cur, held := l.leases[k]; held && now.Before(cur.expires) {
		return "", false, nil
	}
	l.next++
	token := strconv.FormatInt(l.next, 10)
	l.leases[k] = lease{token: token, expires: now.Add(max(ttl, time.Millisecond))}
	return token, true, nil
}

// Release gives the lease back if token still holds it.
func (l *Locks) Release(_ context.Context, name, lock, token string) error {
	if !tenant.Valid(name) || !lockNameRE.MatchString(lock) {
		return fmt.Errorf("release lock: invalid tenant %q or lock %q", name, lock)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := lockKey{name, lock}
	if cur, held := l.leases[k]; held && cur.token == token && l.clock().Before(cur.expires) {
		delete(l.leases, k)
	}
	return nil
}

// Renew gives the lease a fresh ttl if token still holds it.
func (l *Locks) Renew(_ context.Context, name, lock, token string, ttl time.Duration) (bool, error) {
	if !tenant.Valid(name) || !lockNameRE.MatchString(lock) {
		return false, fmt.Errorf("renew lock: invalid tenant %q or lock %q", name, lock)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := lockKey{name, lock}
	now := l.clock()
	cur, held := l.leases[k]
	if !held || cur.token != token || !now.Before(cur.expires) {
		return false, nil
	}
	l.leases[k] = lease{token: token, expires: now.Add(max(ttl, time.Millisecond))}
	return true, nil
}
