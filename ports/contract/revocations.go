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
