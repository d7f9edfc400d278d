package memory

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/imdhq/imd/ports"
)

// Revocations is the in-memory token deny-list. Entries never expire: tests live shorter than
// tokens.
type Revocations struct {
	mu      sync.Mutex
	tokens  map[string]bool      // tenant\x00jti
	cutoffs map[string]time.Time // tenant\x00user
}

var _ ports.TokenRevocations = (*Revocations)(nil)

// NewRevocations returns an empty deny-list.
func NewRevocations() *Revocations {
	return &Revocations{tokens: make(map[string]bool), cutoffs: make(map[string]time.Time)}
}

// RevokeToken denies a token that has not expired yet.
func (r *Revocations) RevokeToken(_ context.Context, tenant, tokenID string, expires time.Time) error {
	if !expires.After(time.Now()) {
		return nil
	}
	r.mu.Lock()
	r.tokens[tenant+"\x00"+tokenID] = true
	r.mu.Unlock()
	return nil
}

// RevokeUser raises the user's cut-off to at; it never moves back.
func (r *Revocations) RevokeUser(_ context.Context, tenant string, user int64, at time.Time, _ time.Duration) error {
	k := userKey(tenant, user)
	r.mu.Lock()
	if at.After(r.cutoffs[k]) {
		r.cutoffs[k] = at.Truncate(time.Millisecond)
	}
	r.mu.Unlock()
	return nil
}

// Revocation reports the token's and the user's entries.
func (r *Revocations) Revocation(_ context.Context, tenant, tokenID string, user int64) (bool, time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tokens[tenant+"\x00"+tokenID], r.cutoffs[userKey(tenant, user)], nil
}

func userKey(tenant string, user int64) string {
	return tenant + "\x00" + strconv.FormatInt(user, 10)
}
