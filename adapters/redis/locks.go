package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports"
)

// lockNameRE keeps lock names to plain words, since they become part of a key.
var lockNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Locks is ports.Locks: SET key token NX PX ttl, released by a compare-and-delete script, so
// a holder whose lease expired cannot release the next holder's.
type Locks struct {
	c rueidis.Client
}

var _ ports.Locks = (*Locks)(nil)

// NewLocks returns the locks on c.
func NewLocks(c rueidis.Client) *Locks { return &Locks{c: c} }

// Acquire takes the lease for ttl (at least a millisecond).
func (l *Locks) Acquire(ctx context.Context, tenant, name string, ttl time.Duration) (string, bool, error) {
	k, err := lockKeys(tenant, name)
	if err != nil {
		return "", false, fmt.Errorf("acquire lock: %w", err)
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", false, fmt.Errorf("lock token: %w", err)
	}
	token := hex.EncodeToString(raw[:])
	ms := max(ttl.Milliseconds(), 1)
	err = l.c.Do(ctx, l.c.B().Set().Key(k.Lock(name)).Value(token).Nx().PxMilliseconds(ms).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("acquire lock %s of %s: %w", name, tenant, err)
	}
	return token, true, nil
}

// releaseScript deletes the lease only while it still holds token. KEYS: lock. ARGV: token.
var releaseScript = rueidis.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// Release gives the lease back if token still holds it.
func (l *Locks) Release(ctx context.Context, tenant, name, token string) error {
	k, err := lockKeys(tenant, name)
	if err != nil {
		return fmt.Errorf("release lock: %w", err)
	}
	if err := releaseScript.Exec(ctx, l.c, []string{k.Lock(name)}, []string{token}).Error(); err != nil {
		return fmt.Errorf("release lock %s of %s: %w", name, tenant, err)
	}
	return nil
}

// renewLockScript moves the lease's expiry only while it still holds token. KEYS: lock. ARGV:
// token, ttl ms.
var renewLockScript = rueidis.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// Renew gives the lease a fresh ttl if token still holds it.
func (l *Locks) Renew(ctx context.Context, tenant, name, token string, ttl time.Duration) (bool, error) {
	k, err := lockKeys(tenant, name)
	if err != nil {
		return false, fmt.Errorf("renew lock: %w", err)
	}
	n, err := renewLockScript.Exec(ctx, l.c, []string{k.Lock(name)}, []string{token, strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)}).AsInt64()
	if err != nil {
		return false, fmt.Errorf("renew lock %s of %s: %w", name, tenant, err)
	}
	return n == 1, nil
}

func lockKeys(tenant, name string) (Keys, error) {
	if !lockNameRE.MatchString(name) {
		return Keys{}, fmt.Errorf("invalid lock name %q", name)
	}
	return KeysOf(tenant)
}
