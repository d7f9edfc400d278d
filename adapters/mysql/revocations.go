package mysql

import (
	"context"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/ports"
)

// revocationPurge is how many expired rows of each deny-list table one revocation removes: the
// tables stay as small as the live revocations without a sweeper of their own.
const revocationPurge = 100

// Revocations is ports.TokenRevocations over im_revoked_tokens and im_user_token_cutoffs: the
// deny-list that outlives Redis (issue 19), which caches it.
type Revocations struct{ cluster *Cluster }

var _ ports.TokenRevocations = (*Revocations)(nil)

// NewRevocations returns the deny-list of the provisioned tenants of c.
func NewRevocations(c *Cluster) *Revocations { return &Revocations{cluster: c} }

// RevokeToken denies a token until it expires; an already expired token needs no row.
func (r *Revocations) RevokeToken(ctx context.Context, tenant, tokenID string, expires time.Time) error {
	now := time.Now().UTC()
	if !expires.After(now) {
		return nil
	}
	t, err := r.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.RevokeToken(ctx, sqlcdb.RevokeTokenParams{TokenID: tokenID, ExpiresAt: expires.UTC().Truncate(time.Millisecond)}); err != nil {
		return fmt.Errorf("revoke token of %s: %w", tenant, err)
	}
	if err := t.q.PurgeRevokedTokens(ctx, sqlcdb.PurgeRevokedTokensParams{Now: now, Limit: revocationPurge}); err != nil {
		return fmt.Errorf("purge expired token revocations of %s: %w", tenant, err)
	}
	return nil
}

// RevokeUser raises the user's cut-off to at for ttl; it never moves back.
func (r *Revocations) RevokeUser(ctx context.Context, tenant string, user int64, at time.Time, ttl time.Duration) error {
	t, err := r.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	at = at.UTC().Truncate(time.Millisecond)
	err = t.q.RaiseUserTokenCutoff(ctx, sqlcdb.RaiseUserTokenCutoffParams{UserID: user, CutoffAt: at, ExpiresAt: at.Add(max(ttl, time.Millisecond))})
	if err != nil {
		return fmt.Errorf("revoke tokens of user %d of %s: %w", user, tenant, err)
	}
	if err := t.q.PurgeUserTokenCutoffs(ctx, sqlcdb.PurgeUserTokenCutoffsParams{Now: time.Now().UTC(), Limit: revocationPurge}); err != nil {
		return fmt.Errorf("purge expired user revocations of %s: %w", tenant, err)
	}
	return nil
}

// Revocation reads the token's and the user's live rows.
func (r *Revocations) Revocation(ctx context.Context, tenant, tokenID string, user int64) (bool, time.Time, error) {
	t, err := r.cluster.tenant(tenant)
	if err != nil {
		return false, time.Time{}, err
	}
	now := time.Now().UTC()
	n, err := t.q.TokenRevoked(ctx, sqlcdb.TokenRevokedParams{TokenID: tokenID, Now: now})
	if err != nil {
		return false, time.Time{}, fmt.Errorf("read token revocation of %s: %w", tenant, err)
	}
	cutoffs, err := t.q.UserTokenCutoff(ctx, sqlcdb.UserTokenCutoffParams{UserID: user, Now: now})
	if err != nil {
		return false, time.Time{}, fmt.Errorf("read revocation of user %d of %s: %w", user, tenant, err)
	}
	var cutoff time.Time
	if len(cutoffs) > 0 {
		cutoff = cutoffs[0].UTC()
	}
	return n > 0, cutoff, nil
}
