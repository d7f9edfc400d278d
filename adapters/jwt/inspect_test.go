package jwt

import (
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
)

func TestInspectReturnsRevocationFacts(t *testing.T) {
	tokens := New([]byte("inspect-test-secret-0123456789"))
	before := time.Now().Truncate(time.Second)
	a, err := tokens.Issue(auth.Identity{Tenant: "acme", UserID: 7}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tokens.Issue(auth.Identity{Tenant: "acme", UserID: 7}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ta, err := tokens.Inspect(a)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := tokens.Inspect(b)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case ta.Identity != (auth.Identity{Tenant: "acme", UserID: 7}):
		t.Fatalf("identity = %+v", ta.Identity)
	case ta.ID == "" || ta.ID == tb.ID:
		t.Fatalf("token ids %q and %q must be set and distinct", ta.ID, tb.ID)
	case ta.IssuedAt.Before(before) || ta.IssuedAt.After(time.Now()):
		t.Fatalf("issued at %s, want about now", ta.IssuedAt)
	case ta.ExpiresAt.Sub(ta.IssuedAt) != time.Hour:
		t.Fatalf("expires at %s, issued at %s: want one hour apart", ta.ExpiresAt, ta.IssuedAt)
	}
	if _, err := tokens.Inspect("x.y.z"); apperr.CodeOf(err) != apperr.Unauthenticated {
		t.Fatalf("Inspect of garbage: %v", err)
	}
}
