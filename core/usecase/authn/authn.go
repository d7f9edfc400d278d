// Package authn turns client tokens into identities for both transports: the token verifies,
// its tenant is served here, its user exists (issue 33), and it is not revoked (issue 6). Revocation is a deny-list whose
// entries expire with the tokens they deny, kept in MySQL (issue 19). A connection's AUTH reads
// it every time (two primary-key lookups); a per-request check may use the process's recent
// answers (recent.go). Nothing of it is in Redis, so no Redis loss or rollback revives a
// revoked token (issue 18).
package authn

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// Deps are the ports authentication uses.
type Deps struct {
	Tokens ports.TokenInspector
	// Revocations is the durable deny-list, the truth.
	Revocations ports.TokenRevocations
	// Tenants reports whether a tenant is served (the tenant registry).
	Tenants ports.KnownTenant
	// Users is the directory a token's user must exist in.
	Users ports.Users
	Clock ports.Clock
}

// Config bounds authentication in time.
type Config struct {
	// RecentTTL is how long a per-request check may reuse a "not revoked" answer this process
	// read from Revocations: how long a revocation made on another node can go unseen by this
	// node's per-request checks. Zero: every check reads Revocations.
	RecentTTL time.Duration
	// MaxTTL is the longest token lifetime, how long a user-wide revocation must be kept.
	MaxTTL time.Duration
	// UserTTL is how long an "active" answer of Users is reused, by AUTH and per-request checks
	// alike: how long a user disabled or deleted may still authenticate on a node that was not
	// told (ForgetUser). Zero: every check reads Users.
	UserTTL time.Duration
}

// Service authenticates and revokes tokens.
type Service struct {
	cfg    Config
	d      Deps
	recent *recentChecks
	users  *knownUsers
}

var _ ports.Authenticator = (*Service)(nil)

// New returns the service.
func New(cfg Config, d Deps) *Service {
	return &Service{cfg: cfg, d: d, recent: newRecentChecks(cfg.RecentTTL), users: newKnownUsers(cfg.UserTTL)}
}

// Authenticate verifies a token and checks its tenant, its user and the deny-list itself: a
// connection's AUTH, once per connection, sees every revocation acknowledged anywhere before
// it. Every refusal is 40101; a deny-list or directory that cannot be read is 50301, never a
// pass.
func (s *Service) Authenticate(ctx context.Context, token string) (auth.Identity, error) {
	t, err := s.inspect(ctx, token, false)
	return t.Identity, err
}

// AuthenticateRequest is Authenticate for a per-request check (HTTP): it may reuse this
// process's answer of the last RecentTTL, so a revocation made on another node is refused here
// at most RecentTTL after it was acknowledged; one made through this process, at once.
func (s *Service) AuthenticateRequest(ctx context.Context, token string) (auth.Identity, error) {
	t, err := s.inspect(ctx, token, true)
	return t.Identity, err
}

func (s *Service) inspect(ctx context.Context, token string, reuse bool) (auth.Token, error) {
	t, err := s.d.Tokens.Inspect(token)
	if err != nil {
		return auth.Token{}, err
	}
	if !s.d.Tenants(t.Tenant) {
		return auth.Token{}, apperr.New(apperr.Unauthenticated, "unknown tenant")
	}
	revoked, cutoff, err := s.revocation(ctx, t, reuse)
	if err != nil {
		return auth.Token{}, apperr.Wrap(apperr.Busy, "token check unavailable, retry", err)
	}
	// iat has second precision: a token issued in the second of a user-wide revocation is
	// revoked with it.
	if revoked || (!cutoff.IsZero() && !t.IssuedAt.After(cutoff)) {
		return auth.Token{}, apperr.New(apperr.Unauthenticated, "token revoked")
	}
	// The user's status is checked last, so that between its read and the session the caller
	// binds there is no other I/O a disable could slip into unseen (DESIGN §8.1).
	if err := s.requireUser(ctx, t.Tenant, t.UserID); err != nil {
		return auth.Token{}, err
	}
	return t, nil
}

// userReads bounds the directory reads of one check whose answers forgets keep overtaking.
const userReads = 3

// requireUser refuses a token whose user does not exist, no longer exists or is disabled:
// signed by the right key but for no one allowed in, it must not open a session nor pass a
// request (issue 33; DESIGN §8.1).
func (s *Service) requireUser(ctx context.Context, tenant string, user int64) error {
	for range userReads {
		now := s.d.Clock.Now()
		gen, known := s.users.known(tenant, user, now)
		if known {
			return nil
		}
		st, err := s.d.Users.UserStatus(ctx, tenant, user)
		if err != nil {
			return apperr.Wrap(apperr.Busy, "token check unavailable, retry", err)
		}
		switch st {
		case social.UserActive:
		case social.UserDisabled:
			return apperr.New(apperr.Unauthenticated, "the user is disabled")
		case social.UserDeleted:
			return apperr.New(apperr.Unauthenticated, "the user was deleted")
		default:
			return apperr.New(apperr.Unauthenticated, "token of an unknown user")
		}
		if s.users.remember(tenant, user, now, gen) {
			return nil
		}
		// A forget came while the status was read: "active" may predate a disable it
		// announces, so read again.
	}
	return apperr.New(apperr.Busy, "user status changing, retry")
}

// ForgetUser drops this process's "active" answer about the user, so its next AUTH and
// request read the directory again: what a node does when told the user was disabled or
// deleted (ports.UserSessions). An answer being read meanwhile is not kept.
func (s *Service) ForgetUser(tenant string, user int64) {
	s.users.forget(tenant, user)
}

// revocation reads the deny-list, or with reuse this process's recent answer. A fresh answer
// is kept for later per-request checks.
func (s *Service) revocation(ctx context.Context, t auth.Token, reuse bool) (bool, time.Time, error) {
	now := s.d.Clock.Now()
	a, found, gen := s.recent.lookup(t.Tenant, t.ID, t.UserID, now)
	if reuse && found {
		return a.revoked, a.cutoff, nil
	}
	revoked, cutoff, err := s.d.Revocations.Revocation(ctx, t.Tenant, t.ID, t.UserID)
	if err != nil {
		return false, time.Time{}, err
	}
	s.recent.fill(t.Tenant, t.ID, t.UserID, revoked, cutoff, now, t.ExpiresAt, gen)
	return revoked, cutoff, nil
}

// Logout revokes the token it is given, after checking it.
func (s *Service) Logout(ctx context.Context, token string) error {
	t, err := s.inspect(ctx, token, false)
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
	if err := s.d.Revocations.RevokeToken(ctx, t.Tenant, t.ID, t.ExpiresAt); err != nil {
		return apperr.Wrap(apperr.Busy, "revocation unavailable, retry", err)
	}
	s.recent.forgetToken(t.Tenant, t.ID, t.UserID)
	return nil
}

// RevokeUser revokes every token of a user issued until now (admin); later tokens work.
func (s *Service) RevokeUser(ctx context.Context, tenant string, user int64) (time.Time, error) {
	if user <= 0 {
		return time.Time{}, apperr.New(apperr.InvalidArgument, "user_id must be positive")
	}
	at := s.d.Clock.Now().UTC().Truncate(time.Second)
	if err := s.d.Revocations.RevokeUser(ctx, tenant, user, at, s.cfg.MaxTTL); err != nil {
		return time.Time{}, apperr.Wrap(apperr.Busy, "revocation unavailable, retry", err)
	}
	s.recent.forgetUser(tenant, user)
	return at, nil
}
