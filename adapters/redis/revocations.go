package redis

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"imd/ports"
)

// tokenIDRE keeps token ids (jti) to the characters the JWT adapter issues, since they become
// part of a key.
var tokenIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Revocations is ports.TokenRevocations: one key per revoked token and one per user cut-off,
// each expiring when the tokens it denies would have expired anyway.
type Revocations struct{ c rueidis.Client }

var _ ports.TokenRevocations = (*Revocations)(nil)

// NewRevocations returns the deny-list on c.
func NewRevocations(c rueidis.Client) *Revocations { return &Revocations{c: c} }

// RevokeToken denies a token until it expires; an already expired token needs no entry.
func (r *Revocations) RevokeToken(ctx context.Context, tenant, tokenID string, expires time.Time) error {
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
func (r *Revocations) RevokeUser(ctx context.Context, tenant string, user int64, at time.Time, ttl time.Duration) error {
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
var raiseCutoff = rueidis.NewLuaScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
`)

// Revocation reads both entries in one round trip.
func (r *Revocations) Revocation(ctx context.Context, tenant, tokenID string, user int64) (bool, time.Time, error) {
	k, err := revocationKeys(tenant, tokenID)
	if err != nil {
		return false, time.Time{}, err
	}
	// Both keys carry the tenant's hash tag, so MGET is legal on a cluster.
	vals, err := r.c.Do(ctx, r.c.B().Mget().Key(k.RevokedToken(tokenID), k.RevokedUser(user)).Build()).ToArray()
	if err != nil {
		return false, time.Time{}, fmt.Errorf("read revocations of %s: %w", tenant, err)
	}
	revoked := !vals[0].IsNil()
	var cutoff time.Time
	if !vals[1].IsNil() {
		ms, err := vals[1].AsInt64()
		if err != nil {
			return false, time.Time{}, fmt.Errorf("revocation cut-off of user %d: %w", user, err)
		}
		cutoff = time.UnixMilli(ms)
	}
	return revoked, cutoff, nil
}

func revocationKeys(tenant, tokenID string) (Keys, error) {
	if !tokenIDRE.MatchString(tokenID) {
		return Keys{}, fmt.Errorf("invalid token id %q", tokenID)
	}
	return KeysOf(tenant)
}
