package authn_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/authn"
	"github.com/imdhq/imd/ports"
)

// fakeTokens knows the tokens it issued; every other token is unauthenticated.
type fakeTokens struct {
	clock  *memory.Clock
	issued map[string]auth.Token
}

func (f *fakeTokens) issue(tenant string, user int64) string {
	name := "tok" + strconv.Itoa(len(f.issued))
	now := f.clock.Now().Truncate(time.Second)
	f.issued[name] = auth.Token{Identity: auth.Identity{Tenant: tenant, UserID: user}, ID: name, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	return name
}

func (f *fakeTokens) Inspect(token string) (auth.Token, error) {
	t, ok := f.issued[token]
	if !ok {
		return auth.Token{}, apperr.New(apperr.Unauthenticated, "invalid token")
	}
	return t, nil
}

// usersOf is a directory holding users 1-1000 of acme and other.
func usersOf(t testing.TB) *memory.Directory {
	t.Helper()
	dir := memory.NewDirectory()
	for _, tenant := range []string{"acme", "other"} {
		for id := int64(1); id <= 1000; id++ {
			if err := dir.CreateUser(context.Background(), tenant, social.User{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func newService(t *testing.T) (*authn.Service, *fakeTokens, *memory.Clock) {
	t.Helper()
	clock := memory.NewClock(time.Now())
	tokens := &fakeTokens{clock: clock, issued: map[string]auth.Token{}}
	svc := authn.New(authn.Config{MaxTTL: 24 * time.Hour}, authn.Deps{
		Tokens: tokens, Revocations: memory.NewRevocations(), Clock: clock, Users: usersOf(t),
		Tenants: func(name string) bool { return name == "acme" || name == "other" },
	})
	return svc, tokens, clock
}

func TestAuthenticate(t *testing.T) {
	svc, tokens, _ := newService(t)
	tests := []struct {
		name  string
		token string
		want  apperr.Code
	}{
		{"valid", tokens.issue("acme", 1), apperr.OK},
		{"unknown tenant", tokens.issue("gone", 1), apperr.Unauthenticated},
		{"not a token", "garbage", apperr.Unauthenticated},
		{"user that does not exist", tokens.issue("acme", 4040), apperr.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			who, err := svc.Authenticate(context.Background(), tt.token)
			if got := apperr.CodeOf(err); got != tt.want {
				t.Fatalf("Authenticate = %+v, %v; want code %d", who, err, tt.want)
			}
			if _, err := svc.AuthenticateRequest(context.Background(), tt.token); apperr.CodeOf(err) != tt.want {
				t.Fatalf("AuthenticateRequest = %v; want code %d", err, tt.want)
			}
			if tt.want == apperr.OK && (who.Tenant != "acme" || who.UserID != 1) {
				t.Fatalf("identity = %+v", who)
			}
		})
	}
}

func TestRevocation(t *testing.T) {
	ctx := context.Background()
	svc, tokens, clock := newService(t)
	a, b := tokens.issue("acme", 1), tokens.issue("acme", 1)

	// One token.
	if err := svc.RevokeToken(ctx, "acme", a); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, a); apperr.CodeOf(err) != apperr.Unauthenticated {
		t.Fatalf("revoked token: %v", err)
	}
	if _, err := svc.Authenticate(ctx, b); err != nil {
		t.Fatalf("another token of the user: %v", err)
	}
	if err := svc.RevokeToken(ctx, "other", b); apperr.CodeOf(err) != apperr.InvalidArgument {
		t.Fatalf("revoking through another tenant's path: %v", err)
	}
	if err := svc.RevokeToken(ctx, "acme", "garbage"); apperr.CodeOf(err) != apperr.InvalidArgument {
		t.Fatalf("revoking garbage: %v", err)
	}

	// Logout revokes the token it carries.
	if err := svc.Logout(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, b); apperr.CodeOf(err) != apperr.Unauthenticated {
		t.Fatalf("logged-out token: %v", err)
	}

	// Every token of a user issued so far; later ones work.
	c := tokens.issue("acme", 2)
	other := tokens.issue("acme", 3)
	clock.Advance(2 * time.Second) // the cut-off is judged at second precision, like iat
	if _, err := svc.RevokeUser(ctx, "acme", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, c); apperr.CodeOf(err) != apperr.Unauthenticated {
		t.Fatalf("token of a revoked user: %v", err)
	}
	if _, err := svc.Authenticate(ctx, other); err != nil {
		t.Fatalf("another user's token: %v", err)
	}
	if _, err := svc.RevokeUser(ctx, "acme", 0); apperr.CodeOf(err) != apperr.InvalidArgument {
		t.Fatalf("RevokeUser(0): %v", err)
	}
}

// node is one process's authentication over the shared deny-list.
func node(t testing.TB, tokens *fakeTokens, list ports.TokenRevocations, recent time.Duration) *authn.Service {
	return authn.New(authn.Config{RecentTTL: recent, MaxTTL: 24 * time.Hour}, authn.Deps{
		Tokens: tokens, Revocations: list, Clock: tokens.clock, Users: usersOf(t),
		Tenants: func(name string) bool { return name == "acme" },
	})
}

func wantRefused(t *testing.T, step string, check func(context.Context, string) (auth.Identity, error), tokens ...string) {
	t.Helper()
	for _, tok := range tokens {
		if _, err := check(context.Background(), tok); apperr.CodeOf(err) != apperr.Unauthenticated {
			t.Fatalf("%s: revoked token %s: %v, want 40101", step, tok, err)
		}
	}
}

func wantAccepted(t *testing.T, step string, check func(context.Context, string) (auth.Identity, error), tokens ...string) {
	t.Helper()
	for _, tok := range tokens {
		if _, err := check(context.Background(), tok); err != nil {
			t.Fatalf("%s: token %s: %v, want accepted", step, tok, err)
		}
	}
}

// TestRevocationThroughThisNodeIsRefusedAtOnce: a process's recent "not revoked" answers are
// dropped by its own revocations, so its per-request checks refuse at once (issue 18).
func TestRevocationThroughThisNodeIsRefusedAtOnce(t *testing.T) {
	ctx := context.Background()
	tokens := &fakeTokens{clock: memory.NewClock(time.Now()), issued: map[string]auth.Token{}}
	svc := node(t, tokens, memory.NewRevocations(), time.Hour)
	a, b, c := tokens.issue("acme", 1), tokens.issue("acme", 2), tokens.issue("acme", 3)
	wantAccepted(t, "first checks", svc.AuthenticateRequest, a, b, c)
	if err := svc.Logout(ctx, a); err != nil {
		t.Fatal(err)
	}
	tokens.clock.Advance(2 * time.Second) // the cut-off is judged at second precision, like iat
	if _, err := svc.RevokeUser(ctx, "acme", 2); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "per request", svc.AuthenticateRequest, a, b)
	wantRefused(t, "per connection", svc.Authenticate, a, b)
	wantAccepted(t, "a token never revoked", svc.AuthenticateRequest, c)
}

// TestRevocationOnAnotherNodeIsBoundedByRecentTTL: a logout on node A is refused by a
// connection's AUTH on any node at once, and by another node's per-request checks at most
// RecentTTL after whatever that node read before; a restarted node (all it remembered lost)
// refuses at once. The revocation lives only in the deny-list, so no Redis loss or rollback can
// revive it: the simulator's seed 12841188343621267547 rolled a Redis cache back to a "not
// revoked" taken before the logout.
func TestRevocationOnAnotherNodeIsBoundedByRecentTTL(t *testing.T) {
	ctx := context.Background()
	const recent = 5 * time.Second
	tokens := &fakeTokens{clock: memory.NewClock(time.Now()), issued: map[string]auth.Token{}}
	list := memory.NewRevocations()
	nodeA, nodeB, nodeC := node(t, tokens, list, recent), node(t, tokens, list, recent), node(t, tokens, list, recent)
	a, b := tokens.issue("acme", 1), tokens.issue("acme", 2)
	wantAccepted(t, "B's and C's first checks", nodeB.AuthenticateRequest, a, b)
	wantAccepted(t, "B's and C's first checks", nodeC.AuthenticateRequest, a, b)
	tokens.clock.Advance(2 * time.Second)
	if err := nodeA.Logout(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := nodeA.RevokeUser(ctx, "acme", 2); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "AUTH on C", nodeC.Authenticate, a, b)
	wantRefused(t, "C per request after its AUTH read the deny-list", nodeC.AuthenticateRequest, a, b)
	wantRefused(t, "a restarted B", node(t, tokens, list, recent).AuthenticateRequest, a, b)
	// B's answers read 2 s before the revocations still stand for 3 s: the bound, not a wish.
	wantAccepted(t, "B per request inside RecentTTL of its read", nodeB.AuthenticateRequest, a, b)
	tokens.clock.Advance(recent - 2*time.Second)
	wantRefused(t, "B per request, RecentTTL after its read", nodeB.AuthenticateRequest, a, b)
}

// racingRevocations runs a revocation right after the first deny-list read, before the reader
// keeps the answer: the read is older than the revocation.
type racingRevocations struct {
	ports.TokenRevocations
	race func()
}

func (r *racingRevocations) Revocation(ctx context.Context, tenant, tokenID string, user int64) (bool, time.Time, error) {
	revoked, cutoff, err := r.TokenRevocations.Revocation(ctx, tenant, tokenID, user)
	if race := r.race; race != nil {
		r.race = nil
		race()
	}
	return revoked, cutoff, err
}

// TestAnAnswerReadBeforeALogoutIsNotKept: a check that read the deny-list before this
// process's logout and lands after it keeps nothing, so the next request is refused.
func TestAnAnswerReadBeforeALogoutIsNotKept(t *testing.T) {
	ctx := context.Background()
	tokens := &fakeTokens{clock: memory.NewClock(time.Now()), issued: map[string]auth.Token{}}
	list := &racingRevocations{TokenRevocations: memory.NewRevocations()}
	svc := node(t, tokens, list, time.Hour)
	a := tokens.issue("acme", 1)
	list.race = func() {
		if err := svc.Logout(ctx, a); err != nil {
			t.Errorf("logout during the check: %v", err)
		}
	}
	wantAccepted(t, "the check that raced the logout", svc.AuthenticateRequest, a)
	wantRefused(t, "the next request", svc.AuthenticateRequest, a)
}

// BenchmarkAuthenticateRequest is the core's cost of a per-request check whose answer the
// process remembers (the common case), against one that reads the deny-list (a memory fake
// here; adapters/mysql BenchmarkRevocation measures the MariaDB read).
func BenchmarkAuthenticateRequest(b *testing.B) {
	for _, bc := range []struct {
		name   string
		recent time.Duration
	}{{"remembered", time.Hour}, {"deny-list read", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			tokens := &fakeTokens{clock: memory.NewClock(time.Now()), issued: map[string]auth.Token{}}
			svc := node(b, tokens, memory.NewRevocations(), bc.recent)
			toks := make([]string, 1000)
			for i := range toks {
				toks[i] = tokens.issue("acme", int64(i+1))
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				if _, err := svc.AuthenticateRequest(ctx, toks[i%len(toks)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// countingUsers counts the directory's answers and can fail them; during runs after it read,
// before the answer is returned.
type countingUsers struct {
	*memory.Directory
	reads  int
	err    error
	during func()
}

func (c *countingUsers) UserStatus(ctx context.Context, tenant string, user int64) (social.UserStatus, error) {
	c.reads++
	if c.err != nil {
		return social.UserUnknown, c.err
	}
	st, err := c.Directory.UserStatus(ctx, tenant, user)
	if c.during != nil {
		c.during()
	}
	return st, err
}

// TestDisabledAndDeletedUsers: a disabled or deleted user's token is 40101 on AUTH and per
// request once this node forgot its "active" answer (ForgetUser, what the node channel's user
// envelope does); enabling lets the same token back; an "active" read that a forget overtook
// is not kept (DESIGN §8.1).
func TestDisabledAndDeletedUsers(t *testing.T) {
	ctx := context.Background()
	svc, tokens, users, _ := newUserChecks(t)
	tok := tokens.issue("acme", 1)
	set := func(st social.UserStatus) {
		t.Helper()
		if err := users.SetUserStatus(ctx, "acme", 1, st); err != nil {
			t.Fatal(err)
		}
	}
	wantAccepted(t, "active", svc.Authenticate, tok)

	set(social.UserDisabled)
	wantAccepted(t, "disabled, this node not told yet (UserTTL)", svc.Authenticate, tok)
	svc.ForgetUser("acme", 1)
	wantRefused(t, "disabled", svc.Authenticate, tok)
	wantRefused(t, "disabled, per request", svc.AuthenticateRequest, tok)

	set(social.UserActive)
	wantAccepted(t, "enabled again, the same token", svc.Authenticate, tok)

	// A disable whose forget lands while an "active" answer is being read: the answer is not
	// used, the check reads again and sees the disable.
	users.during = func() {
		users.during = nil
		set(social.UserDisabled)
		svc.ForgetUser("acme", 1)
	}
	svc.ForgetUser("acme", 1)
	wantRefused(t, "read overtaken by a disable", svc.Authenticate, tok)
	// Forgets that keep overtaking the reads make the check 50301, never a pass.
	set(social.UserActive)
	users.during = func() { svc.ForgetUser("acme", 1) }
	if _, err := svc.Authenticate(ctx, tok); apperr.CodeOf(err) != apperr.Busy {
		t.Fatalf("every read overtaken: %v, want 50301", err)
	}
	users.during = nil
	wantAccepted(t, "enabled, nothing overtaking", svc.Authenticate, tok)

	set(social.UserDeleted)
	svc.ForgetUser("acme", 1)
	wantRefused(t, "deleted", svc.Authenticate, tok)
	wantRefused(t, "deleted, per request", svc.AuthenticateRequest, tok)
}

// newUserChecks is a service whose users come from a counting directory, with UserTTL a
// minute, for tenants acme and other.
func newUserChecks(t *testing.T) (*authn.Service, *fakeTokens, *countingUsers, *memory.Clock) {
	clock := memory.NewClock(time.Now())
	tokens := &fakeTokens{clock: clock, issued: map[string]auth.Token{}}
	users := &countingUsers{Directory: usersOf(t)}
	svc := authn.New(authn.Config{MaxTTL: time.Hour, UserTTL: time.Minute}, authn.Deps{
		Tokens: tokens, Revocations: memory.NewRevocations(), Clock: clock, Users: users,
		Tenants: func(name string) bool { return name == "acme" || name == "other" },
	})
	return svc, tokens, users, clock
}

// TestUserExistence: a token of a user the directory does not hold is refused with 40101 on
// AUTH and per request; "exists" is reused for UserTTL and "does not exist" never, so a user
// created after a refusal logs in at once; a directory that cannot answer is 50301 (issue 33).
func TestUserExistence(t *testing.T) {
	ctx := context.Background()
	svc, tokens, users, clock := newUserChecks(t)
	known, late := tokens.issue("acme", 1), tokens.issue("acme", 4040)

	wantRefused(t, "unknown user", svc.Authenticate, late)
	wantRefused(t, "unknown user, per request", svc.AuthenticateRequest, late)
	if users.reads != 2 {
		t.Fatalf("directory read %d times for two checks of an unknown user, want 2 (no negative answer kept)", users.reads)
	}
	if err := users.CreateUser(ctx, "acme", social.User{ID: 4040}); err != nil {
		t.Fatal(err)
	}
	wantAccepted(t, "the user created after", svc.Authenticate, late)

	users.reads = 0
	wantAccepted(t, "known user", svc.Authenticate, known, known)
	wantAccepted(t, "known user, per request", svc.AuthenticateRequest, known)
	if users.reads != 1 {
		t.Fatalf("directory read %d times for three checks within UserTTL, want 1", users.reads)
	}
	if _, err := svc.Authenticate(ctx, tokens.issue("other", 1)); err != nil {
		t.Fatalf("the same id in another tenant: %v", err)
	}

	users.err = errors.New("mysql down")
	wantAccepted(t, "known user, directory down", svc.Authenticate, known)
	clock.Advance(time.Minute)
	if _, err := svc.Authenticate(ctx, known); apperr.CodeOf(err) != apperr.Busy {
		t.Fatalf("directory down past UserTTL: %v, want 50301", err)
	}
}
