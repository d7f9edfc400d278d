package authn_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/authn"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
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

func newService(t *testing.T) (*authn.Service, *fakeTokens, *memory.Clock) {
	t.Helper()
	clock := memory.NewClock(time.Now())
	tokens := &fakeTokens{clock: clock, issued: map[string]auth.Token{}}
	svc := authn.New(authn.Deps{
		Tokens: tokens, Revocations: memory.NewRevocations(), Clock: clock,
		Tenants: func(name string) bool { return name == "acme" || name == "other" },
	}, 24*time.Hour)
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			who, err := svc.Authenticate(context.Background(), tt.token)
			if got := apperr.CodeOf(err); got != tt.want {
				t.Fatalf("Authenticate = %+v, %v; want code %d", who, err, tt.want)
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

// TestRevocationOutlivesTheCache: the deny-list is the truth, the cache only answers in front
// of it; a cached pass never outlives a revocation and a lost cache revives nothing (issue 19).
func TestRevocationOutlivesTheCache(t *testing.T) {
	ctx := context.Background()
	clock := memory.NewClock(time.Now())
	tokens := &fakeTokens{clock: clock, issued: map[string]auth.Token{}}
	cache := memory.NewRevocationCache(clock.Now)
	svc := authn.New(authn.Deps{
		Tokens: tokens, Revocations: memory.NewRevocations(), Cache: cache, CacheTTL: time.Hour, Clock: clock,
		Tenants: func(name string) bool { return name == "acme" },
	}, 24*time.Hour)
	a, b := tokens.issue("acme", 1), tokens.issue("acme", 2)
	for _, tok := range []string{a, b} { // both cached as "not revoked"
		if _, err := svc.Authenticate(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.RevokeToken(ctx, "acme", a); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RevokeUser(ctx, "acme", 2); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"cached", "after the cache was lost", "refilled"} {
		if step == "after the cache was lost" {
			cache.Forget()
		}
		for _, tok := range []string{a, b} {
			if _, err := svc.Authenticate(ctx, tok); apperr.CodeOf(err) != apperr.Unauthenticated {
				t.Fatalf("%s: revoked token %s: %v, want 40101", step, tok, err)
			}
		}
	}
	c := tokens.issue("acme", 3)
	cache.Forget()
	if _, err := svc.Authenticate(ctx, c); err != nil {
		t.Fatalf("a token never revoked after the cache was lost: %v", err)
	}
}
