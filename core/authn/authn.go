// Package authn turns client tokens into identities for both transports: the token verifies,
// its tenant is served here, and it is not revoked (issue 6). Revocation is a deny-list whose
// entries expire with the tokens they deny, kept in MySQL and cached in Redis (issue 19): a
// Redis that lost the cache costs a MySQL read, never a revived token.
package authn

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/ports"
)

// Deps are the ports authentication uses.
type Deps struct {
	Tokens ports.TokenInspector
	// Revocations is the durable deny-list, the truth.
	Revocations ports.TokenRevocations
	// Cache answers token checks in front of Revocations; nil: every check reads Revocations.
	Cache ports.RevocationCache
	// CacheTTL bounds how long a cached "not revoked" lives; it matters only when recording a
	// revocation in the cache failed (the revocation then answers 50301 and is retried).
	CacheTTL time.Duration
	// Tenants reports whether a tenant is served (the tenant registry).
	Tenants ports.KnownTenant
	Clock   ports.Clock
}

// Service authenticates and revokes tokens.
type Service struct {
	d      Deps
	maxTTL time.Duration
}

var _ ports.Authenticator = (*Service)(nil)

// New returns the service; maxTTL is the longest token lifetime, how long a user-wide
// revocation must be kept.
func New(d Deps, maxTTL time.Duration) *Service { return &Service{d: d, maxTTL: maxTTL} }

// Authenticate verifies a token and checks its tenant and the deny-list. Every refusal is
// 40101; a deny-list that cannot be read is 50301, never a pass.
func (s *Service) Authenticate(ctx context.Context, token string) (auth.Identity, error) {
	t, err := s.inspect(ctx, token)
	return t.Identity, err
}

func (s *Service) inspect(ctx context.Context, token string) (auth.Token, error) {
	t, err := s.d.Tokens.Inspect(token)
	if err != nil {
		return auth.Token{}, err
	}
	if !s.d.Tenants(t.Tenant) {
		return auth.Token{}, apperr.New(apperr.Unauthenticated, "unknown tenant")
	}
	revoked, cutoff, err := s.revocation(ctx, t)
	if err != nil {
		return auth.Token{}, apperr.Wrap(apperr.Busy, "token check unavailable, retry", err)
	}
	// iat has second precision: a token issued in the second of a user-wide revocation is
	// revoked with it.
	if revoked || (!cutoff.IsZero() && !t.IssuedAt.After(cutoff)) {
		return auth.Token{}, apperr.New(apperr.Unauthenticated, "token revoked")
	}
	return t, nil
}

// revocation reads the cache, and the deny-list when the cache misses or fails: an
// unreachable Redis does not stop authentication while MySQL answers.
func (s *Service) revocation(ctx context.Context, t auth.Token) (bool, time.Time, error) {
	if s.d.Cache != nil {
		revoked, cutoff, found, err := s.d.Cache.Cached(ctx, t.Tenant, t.ID, t.UserID)
		if err == nil && found {
			return revoked, cutoff, nil
		}
	}
	revoked, cutoff, err := s.d.Revocations.Revocation(ctx, t.Tenant, t.ID, t.UserID)
	if err != nil {
		return false, time.Time{}, err
	}
	if s.d.Cache != nil {
		// A failed fill costs the next check a MySQL read, nothing more.
		_ = s.d.Cache.Fill(ctx, t.Tenant, t.ID, t.UserID, revoked, cutoff, s.d.CacheTTL)
	}
	return revoked, cutoff, nil
}

// Logout revokes the token it is given, after checking it.
func (s *Service) Logout(ctx context.Context, token string) error {
	t, err := s.inspect(ctx, token)
	if err != nil {
		return err
	}
	return s.revoke(ctx, t)
}

// RevokeToken revokes a token of the tenant (admin). A token of another tenant is 40001: an
// operator of one tenant's path never touches another's.
func (s *Service) RevokeToken(ctx context.Context, tenant, token string) error {
	t, err := s.d.Tokens.Inspect(token)
	if apperr.CodeOf(err) == apperr.Unauthenticated {
		// An expired or forged token needs no revocation; say why it was not taken.
		return apperr.New(apperr.InvalidArgument, "token is invalid or expired: "+apperr.MessageOf(err))
	}
	if err != nil {
		return err
	}
	if t.Tenant != tenant {
		return apperr.New(apperr.InvalidArgument, "token belongs to another tenant")
	}
	return s.revoke(ctx, t)
}

func (s *Service) revoke(ctx context.Context, t auth.Token) error {
	// The deny-list first: once it holds the revocation, losing the cache cannot undo it.
	if err := s.d.Revocations.RevokeToken(ctx, t.Tenant, t.ID, t.ExpiresAt); err != nil {
		return apperr.Wrap(apperr.Busy, "revocation unavailable, retry", err)
	}
	if s.d.Cache != nil {
		// Over a cached "not revoked", which would otherwise admit the token until it expires.
		if err := s.d.Cache.RevokeToken(ctx, t.Tenant, t.ID, t.ExpiresAt); err != nil {
			return apperr.Wrap(apperr.Busy, "revocation stored but not yet effective everywhere, retry", err)
		}
	}
	return nil
}

// RevokeUser revokes every token of a user issued until now (admin); later tokens work.
func (s *Service) RevokeUser(ctx context.Context, tenant string, user int64) (time.Time, error) {
	if user <= 0 {
		return time.Time{}, apperr.New(apperr.InvalidArgument, "user_id must be positive")
	}
	at := s.d.Clock.Now().UTC().Truncate(time.Second)
	if err := s.d.Revocations.RevokeUser(ctx, tenant, user, at, s.maxTTL); err != nil {
		return time.Time{}, apperr.Wrap(apperr.Busy, "revocation unavailable, retry", err)
	}
	if s.d.Cache != nil {
		if err := s.d.Cache.RevokeUser(ctx, tenant, user, at, s.maxTTL); err != nil {
			return time.Time{}, apperr.Wrap(apperr.Busy, "revocation stored but not yet effective everywhere, retry", err)
		}
	}
	return at, nil
}
