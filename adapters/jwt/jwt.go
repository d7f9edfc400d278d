// Package jwt issues and verifies client tokens: HS256 JWTs whose claims name the tenant
// (tid) and the user (sub, decimal), with exp, iat and a random jti.
package jwt

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	jwtlib "github.com/golang-jwt/jwt/v5"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/tenant"
)

// clockSkew tolerates clocks of different nodes disagreeing a little on exp and iat, so a
// token issued on one node is not refused by another for being issued "in the future".
const clockSkew = 5 * time.Second

var errNoSecret = errors.New("jwt: empty signing secret")

// claims is the token payload.
type claims struct {
	Tenant string `json:"tid"`
	jwtlib.RegisteredClaims
}

// Tokens is a ports.Tokens signing with one shared secret.
type Tokens struct {
	secret []byte
	parser *jwtlib.Parser
}

// New returns tokens signed with secret. The secret is copied; its length is checked by the
// configuration loader.
func New(secret []byte) *Tokens {
	return &Tokens{
		secret: append([]byte(nil), secret...),
		// Only HS256 is accepted, so a token cannot choose a weaker or keyless algorithm.
		parser: jwtlib.NewParser(
			jwtlib.WithValidMethods([]string{jwtlib.SigningMethodHS256.Alg()}),
			jwtlib.WithExpirationRequired(),
			jwtlib.WithIssuedAt(),
			jwtlib.WithLeeway(clockSkew),
		),
	}
}

// Issue signs a token for id valid for ttl.
func (t *Tokens) Issue(id auth.Identity, ttl time.Duration) (string, error) {
	if len(t.secret) == 0 {
		return "", errNoSecret
	}
	if ttl <= 0 {
		return "", fmt.Errorf("jwt: ttl %s must be positive", ttl)
	}
	if !tenant.Valid(id.Tenant) || id.UserID <= 0 {
		return "", fmt.Errorf("jwt: invalid identity %q/%d", id.Tenant, id.UserID)
	}
	now := time.Now()
	tok := jwtlib.NewWithClaims(jwtlib.SigningMethodHS256, claims{
		Tenant: id.Tenant,
		RegisteredClaims: jwtlib.RegisteredClaims{
			Subject:   strconv.FormatInt(id.UserID, 10),
			ExpiresAt: jwtlib.NewNumericDate(now.Add(ttl)),
			IssuedAt:  jwtlib.NewNumericDate(now),
			// A random id makes every token distinguishable (revocation lists, logs).
			ID: rand.Text(),
		},
	})
	signed, err := tok.SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("jwt: sign: %w", err)
	}
	return signed, nil
}

// Verify checks signature, algorithm, expiry and claims; every failure is Unauthenticated.
func (t *Tokens) Verify(token string) (auth.Identity, error) {
	tok, err := t.Inspect(token)
	return tok.Identity, err
}

// Inspect is Verify that also returns the token's id and times, for revocation.
func (t *Tokens) Inspect(token string) (auth.Token, error) {
	var c claims
	_, err := t.parser.ParseWithClaims(token, &c, func(*jwtlib.Token) (any, error) {
		if len(t.secret) == 0 {
			return nil, errNoSecret
		}
		return t.secret, nil
	})
	switch {
	case errors.Is(err, jwtlib.ErrTokenExpired):
		return auth.Token{}, apperr.Wrap(apperr.Unauthenticated, "token expired", err)
	case err != nil:
		return auth.Token{}, apperr.Wrap(apperr.Unauthenticated, "invalid token", err)
	}
	user, err := strconv.ParseInt(c.Subject, 10, 64)
	switch {
	case err != nil || user <= 0:
		return auth.Token{}, apperr.New(apperr.Unauthenticated, "invalid token: bad sub")
	case !tenant.Valid(c.Tenant):
		return auth.Token{}, apperr.New(apperr.Unauthenticated, "invalid token: bad tid")
	case c.IssuedAt == nil || c.ID == "":
		return auth.Token{}, apperr.New(apperr.Unauthenticated, "invalid token: missing iat or jti")
	}
	// WithExpirationRequired guarantees exp.
	return auth.Token{
		Identity: auth.Identity{Tenant: c.Tenant, UserID: user},
		ID:       c.ID, IssuedAt: c.IssuedAt.Time, ExpiresAt: c.ExpiresAt.Time,
	}, nil
}
