// Package auth holds who a request acts for.
package auth

// Identity is the verified subject of a token: a user of one tenant.
type Identity struct {
	Tenant string
	UserID int64
}
