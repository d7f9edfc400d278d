package contract

import (
	"context"
	"testing"
	"time"

	"github.com/imdhq/imd/ports"
)

// RevocationsFactory returns a deny-list and an empty tenant.
type RevocationsFactory func(t *testing.T) (r ports.TokenRevocations, tenant string)

// Revocations runs the token deny-list contract.
func Revocations(t *testing.T, newList RevocationsFactory) {
	r, tenant := newList(t)
	ctx := context.Background()
	check := func(tokenID string, user int64, wantRevoked bool, wantCutoff time.Time) {
		t.Helper()
		revoked, cutoff, err := r.Revocation(ctx, tenant, tokenID, user)
		if err != nil || revoked != wantRevoked || !cutoff.Equal(wantCutoff) {
			t.Fatalf("Revocation(%s, %d) = %v, %v, %v; want %v, %v", tokenID, user, revoked, cutoff, err, wantRevoked, wantCutoff)
		}
	}
	check("TOKEN1", 1, false, time.Time{})
	if err := r.RevokeToken(ctx, tenant, "TOKEN1", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	if err := r.RevokeToken(ctx, tenant, "TOKEN2", time.Now().Add(-time.Hour)); err != nil {
		t.Fatalf("RevokeToken of an expired token: %v", err)
	}
	check("TOKEN1", 1, true, time.Time{})
	check("TOKEN2", 1, false, time.Time{})

	cut := time.Now().Truncate(time.Millisecond)
	if err := r.RevokeUser(ctx, tenant, 7, cut, time.Hour); err != nil {
		t.Fatalf("RevokeUser: %v", err)
	}
	// An older revocation arriving late never moves the cut-off back.
	if err := r.RevokeUser(ctx, tenant, 7, cut.Add(-time.Minute), time.Hour); err != nil {
		t.Fatalf("RevokeUser earlier: %v", err)
	}
	check("TOKEN3", 7, false, cut)
	check("TOKEN3", 8, false, time.Time{})
}

// RevocationCacheFactory returns a revocation cache and an empty tenant.
type RevocationCacheFactory func(t *testing.T) (c ports.RevocationCache, tenant string)

// RevocationCache runs the cache contract: a miss until both entries are cached, fills never
// cover a revocation, revocations overwrite fills, cut-offs never move back.
func RevocationCache(t *testing.T, newCache RevocationCacheFactory) {
	c, tenant := newCache(t)
	ctx := context.Background()
	check := func(step, tokenID string, user int64, wantFound, wantRevoked bool, wantCutoff time.Time) {
		t.Helper()
		revoked, cutoff, found, err := c.Cached(ctx, tenant, tokenID, user)
		if err != nil || found != wantFound || revoked != wantRevoked || !cutoff.Equal(wantCutoff) {
			t.Fatalf("%s: Cached(%s, %d) = %v, %v, found %v, %v; want %v, %v, found %v",
				step, tokenID, user, revoked, cutoff, found, err, wantRevoked, wantCutoff, wantFound)
		}
	}
	fill := func(tokenID string, user int64, revoked bool, cutoff time.Time) {
		t.Helper()
		if err := c.Fill(ctx, tenant, tokenID, user, revoked, cutoff, time.Hour); err != nil {
			t.Fatalf("Fill(%s, %d): %v", tokenID, user, err)
		}
	}
	check("empty", "TOKEN1", 1, false, false, time.Time{})
	fill("TOKEN1", 1, false, time.Time{})
	check("filled", "TOKEN1", 1, true, false, time.Time{})
	check("other token of a cached user", "TOKEN2", 1, false, false, time.Time{})

	if err := c.RevokeToken(ctx, tenant, "TOKEN1", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	check("revoked over a cached pass", "TOKEN1", 1, true, true, time.Time{})
	fill("TOKEN1", 1, false, time.Time{}) // a stale read of the deny-list, landing late
	check("a late fill never covers a revocation", "TOKEN1", 1, true, true, time.Time{})

	cut := time.Now().Truncate(time.Millisecond)
	if err := c.RevokeUser(ctx, tenant, 1, cut, time.Hour); err != nil {
		t.Fatalf("RevokeUser: %v", err)
	}
	check("user cut-off over a cached none", "TOKEN1", 1, true, true, cut)
	if err := c.RevokeUser(ctx, tenant, 1, cut.Add(-time.Minute), time.Hour); err != nil {
		t.Fatalf("RevokeUser earlier: %v", err)
	}
	fill("TOKEN3", 1, false, time.Time{})
	check("cut-off never moves back, a fill never lowers it", "TOKEN3", 1, true, false, cut)

	fill("TOKEN4", 9, false, cut)
	check("filled cut-off", "TOKEN4", 9, true, false, cut)
}
