package auth

import "time"

// Token is a verified token with what revocation needs besides the identity: its id (jti),
// when it was issued, and when it expires anyway.
type Token struct {
	Identity
	ID        string
	IssuedAt  time.Time
	ExpiresAt time.Time
}
