package jwt

import (
	"strings"
	"testing"
	"time"

	jwtlib "github.com/golang-jwt/jwt/v5"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func TestIssueThenVerify(t *testing.T) {
	tokens := New(secret)
	want := auth.Identity{Tenant: "default", UserID: 9007199254740993} // above 2^53: sub is a string
	tok, err := tokens.Issue(want, time.Hour)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	got, err := tokens.Verify(tok)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got != want {
		t.Errorf("Verify = %+v, want %+v", got, want)
	}
}

func TestIssuedClaims(t *testing.T) {
	tok, err := New(secret).Issue(auth.Identity{Tenant: "acme", UserID: 42}, time.Minute)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	var c jwtlib.MapClaims
	if _, _, err := jwtlib.NewParser().ParseUnverified(tok, &c); err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, k := range []string{"tid", "sub", "exp", "iat", "jti"} {
		if _, ok := c[k]; !ok {
			t.Errorf("claim %q missing from %v", k, c)
		}
	}
	if c["tid"] != "acme" || c["sub"] != "42" {
		t.Errorf("tid, sub = %v, %v; want acme, \"42\"", c["tid"], c["sub"])
	}
	other, _ := New(secret).Issue(auth.Identity{Tenant: "acme", UserID: 42}, time.Minute)
	if other == tok {
		t.Error("two tokens for the same identity are equal; jti should differ")
	}
}

func TestIssueRejects(t *testing.T) {
	tests := []struct {
		name   string
		secret []byte
		id     auth.Identity
		ttl    time.Duration
	}{
		{"empty secret", nil, auth.Identity{Tenant: "default", UserID: 1}, time.Hour},
		{"zero ttl", secret, auth.Identity{Tenant: "default", UserID: 1}, 0},
		{"negative ttl", secret, auth.Identity{Tenant: "default", UserID: 1}, -time.Second},
		{"no user", secret, auth.Identity{Tenant: "default"}, time.Hour},
		{"bad tenant", secret, auth.Identity{Tenant: "Bad{tag}", UserID: 1}, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tok, err := New(tt.secret).Issue(tt.id, tt.ttl); err == nil {
				t.Errorf("Issue = %q, want an error", tok)
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	now := time.Now()
	valid := func() jwtlib.MapClaims {
		return jwtlib.MapClaims{
			"tid": "default", "sub": "7", "jti": "x",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		}
	}
	without := func(key string) jwtlib.MapClaims {
		c := valid()
		delete(c, key)
		return c
	}
	with := func(key string, v any) jwtlib.MapClaims {
		c := valid()
		c[key] = v
		return c
	}
	sign := func(m jwtlib.SigningMethod, key any, c jwtlib.Claims) string {
		t.Helper()
		s, err := jwtlib.NewWithClaims(m, c).SignedString(key)
		if err != nil {
			t.Fatalf("sign: %v", err)
		}
		return s
	}
	good := sign(jwtlib.SigningMethodHS256, secret, valid())
	tests := []struct {
		name  string
		token string
	}{
		{"empty", ""},
		{"malformed", "not.a.jwt"},
		{"garbage segments", "eyJ.eyJ.sig"},
		{"bad signature", sign(jwtlib.SigningMethodHS256, []byte("another-secret-another-secret-00"), valid())},
		{"tampered payload", tamper(t, good)},
		{"wrong alg HS384", sign(jwtlib.SigningMethodHS384, secret, valid())},
		{"alg none", sign(jwtlib.SigningMethodNone, jwtlib.UnsafeAllowNoneSignatureType, valid())},
		{"expired", sign(jwtlib.SigningMethodHS256, secret, with("exp", now.Add(-time.Minute).Unix()))},
		{"issued in the future", sign(jwtlib.SigningMethodHS256, secret, with("iat", now.Add(time.Hour).Unix()))},
		{"missing exp", sign(jwtlib.SigningMethodHS256, secret, without("exp"))},
		{"missing iat", sign(jwtlib.SigningMethodHS256, secret, without("iat"))},
		{"missing jti", sign(jwtlib.SigningMethodHS256, secret, without("jti"))},
		{"missing sub", sign(jwtlib.SigningMethodHS256, secret, without("sub"))},
		{"missing tid", sign(jwtlib.SigningMethodHS256, secret, without("tid"))},
		{"non-numeric sub", sign(jwtlib.SigningMethodHS256, secret, with("sub", "alice"))},
		{"zero sub", sign(jwtlib.SigningMethodHS256, secret, with("sub", "0"))},
		{"numeric tid", sign(jwtlib.SigningMethodHS256, secret, with("tid", 5))},
		{"invalid tid", sign(jwtlib.SigningMethodHS256, secret, with("tid", "a}b"))},
	}
	tokens := New(secret)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := tokens.Verify(tt.token)
			if apperr.CodeOf(err) != apperr.Unauthenticated {
				t.Errorf("Verify = %+v, %v; want code %d", id, err, apperr.Unauthenticated)
			}
		})
	}
	if _, err := tokens.Verify(good); err != nil {
		t.Fatalf("the untouched token must verify: %v", err)
	}
}

func TestVerifyWithEmptySecretRejectsEverything(t *testing.T) {
	tok, err := jwtlib.NewWithClaims(jwtlib.SigningMethodHS256, jwtlib.MapClaims{
		"tid": "default", "sub": "7", "jti": "x", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte{})
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	if _, err := New(nil).Verify(tok); apperr.CodeOf(err) != apperr.Unauthenticated {
		t.Errorf("Verify = %v, want Unauthenticated", err)
	}
}

func TestExpiredMessageTellsClientsToRenew(t *testing.T) {
	tok, err := jwtlib.NewWithClaims(jwtlib.SigningMethodHS256, jwtlib.MapClaims{
		"tid": "default", "sub": "7", "jti": "x",
		"iat": time.Now().Add(-2 * time.Hour).Unix(), "exp": time.Now().Add(-time.Hour).Unix(),
	}).SignedString(secret)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	_, err = New(secret).Verify(tok)
	if got := apperr.MessageOf(err); got != "token expired" {
		t.Errorf("message = %q, want %q", got, "token expired")
	}
}

// tamper changes the payload of a signed token, keeping its signature.
func tamper(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts", token, len(parts))
	}
	var c jwtlib.MapClaims
	if _, _, err := jwtlib.NewParser().ParseUnverified(token, &c); err != nil {
		t.Fatalf("parse: %v", err)
	}
	c["sub"] = "8"
	forged, err := jwtlib.NewWithClaims(jwtlib.SigningMethodHS256, c).SignedString([]byte("x"))
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return strings.Join([]string{parts[0], strings.Split(forged, ".")[1], parts[2]}, ".")
}
