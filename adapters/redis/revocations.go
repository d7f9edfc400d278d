package redis

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports"
)

// tokenIDRE keeps token ids (jti) to the characters the JWT adapter issues, since they become
// part of a key.
var tokenIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// RevocationCache is ports.RevocationCache: one key per token ("1" revoked, "0" not) and one
// per user (the cut-off in Unix ms, "0" for none). A revocation writes its key over anything
// cached, with the lifetime of what it denies; a fill writes only missing keys (SET NX), so a
// revocation that lands between the MySQL read and the fill is never covered up.
type RevocationCache struct{ c rueidis.Client }

var _ ports.RevocationCache = (*RevocationCache)(nil)

// NewRevocationCache returns the cache on c.
func NewRevocationCache(c rueidis.Client) *RevocationCache { return &RevocationCache{c: c} }

// RevokeToken denies a token until it expires; an already expired token needs no entry.
func (r *RevocationCache) RevokeToken(ctx context.Context, tenant, tokenID string, expires time.Time) error {
	k, err := revocationKeys(tenant, tokenID)
	if err != nil {
		return err
	}
	if !expires.After(time.Now()) {
		return nil
	}
	cmd := r.c.B().Set().Key(k.RevokedToken(tokenID)).Value("1").PxatMillisecondsTimestamp(expires.UnixMilli()).Build()
	if err := r.c.Do(ctx, cmd).Error(); err != nil {
		return fmt.Errorf("revoke token of %s: %w", tenant, err)
	}
	return nil
}

// RevokeUser moves the user's cut-off to at; it never moves back, so an older revocation
// replayed late cannot re-admit tokens.
func (r *RevocationCache) RevokeUser(ctx context.Context, tenant string, user int64, at time.Time, ttl time.Duration) error {
	k, err := KeysOf(tenant)
	if err != nil {
		return fmt.Errorf("revoke user: %w", err)
	}
	err = raiseCutoff.Exec(ctx, r.c, []string{k.RevokedUser(user)},
		[]string{strconv.FormatInt(at.UnixMilli(), 10), strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)}).Error()
	if err != nil {
		return fmt.Errorf("revoke tokens of user %d of %s: %w", user, tenant, err)
	}
	return nil
}

// raiseCutoff sets KEYS[1] to ARGV[1] unless it holds a later value, with a TTL of ARGV[2] ms.
// A cached "0" (no cut-off) is lower than any.
var raiseCutoff = rueidis.NewLuaScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
`)

// Cached reads both entries in one round trip.
func (r *RevocationCache) Cached(ctx context.Context, tenant, tokenID string, user int64) (bool, time.Time, bool, error) {
	k, err := revocationKeys(tenant, tokenID)
	if err != nil {
		return false, time.Time{}, false, err
	}
	// Both keys carry the tenant's hash tag, so MGET is legal on a cluster.
	vals, err := r.c.Do(ctx, r.c.B().Mget().Key(k.RevokedToken(tokenID), k.RevokedUser(user)).Build()).ToArray()
	if err != nil {
		return false, time.Time{}, false, fmt.Errorf("read revocations of %s: %w", tenant, err)
	}
	if vals[0].IsNil() || vals[1].IsNil() {
		return false, time.Time{}, false, nil
	}
	tok, err := vals[0].ToString()
	if err != nil {
		return false, time.Time{}, false, fmt.Errorf("revocation of token %s: %w", tokenID, err)
	}
	ms, err := vals[1].AsInt64()
	if err != nil {
		return false, time.Time{}, false, fmt.Errorf("revocation cut-off of user %d: %w", user, err)
	}
	var cutoff time.Time
	if ms > 0 {
		cutoff = time.UnixMilli(ms)
	}
	return tok == "1", cutoff, true, nil
}

// Fill caches the deny-list's answer where nothing is cached.
func (r *RevocationCache) Fill(ctx context.Context, tenant, tokenID string, user int64, revoked bool, cutoff time.Time, ttl time.Duration) error {
	k, err := revocationKeys(tenant, tokenID)
	if err != nil {
		return err
	}
	tok, cut := "0", "0"
	if revoked {
		tok = "1"
	}
	if !cutoff.IsZero() {
		cut = strconv.FormatInt(cutoff.UnixMilli(), 10)
	}
	px := max(ttl.Milliseconds(), 1)
	for _, err := range r.c.DoMulti(ctx,
		r.c.B().Set().Key(k.RevokedToken(tokenID)).Value(tok).Nx().PxMilliseconds(px).Build(),
		r.c.B().Set().Key(k.RevokedUser(user)).Value(cut).Nx().PxMilliseconds(px).Build(),
	) {
		if err := err.Error(); err != nil && !rueidis.IsRedisNil(err) {
			return fmt.Errorf("cache revocations of %s: %w", tenant, err)
		}
	}
	return nil
}

func revocationKeys(tenant, tokenID string) (Keys, error) {
	if !tokenIDRE.MatchString(tokenID) {
		return Keys{}, fmt.Errorf("invalid token id %q", tokenID)
	}
	return KeysOf(tenant)
}
