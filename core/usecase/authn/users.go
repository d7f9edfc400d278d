package authn

import (
	"sync"
	"time"
)

// knownUsers is the process's memory of the users the directory said exist, so that checking
// a token's user costs a map lookup on most AUTHs and HTTP requests (issue 33). Only "exists"
// is kept: a user created just after a refusal is accepted at once. An answer lives ttl, the
// bound on how long a user removed from the directory keeps authenticating here.
type knownUsers struct {
	ttl   time.Duration
	mu    sync.Mutex
	until map[userKey]time.Time
}

// maxKnownUsers bounds the memory: past it, expired answers are dropped, and if that is not
// enough, all of them (the next checks read the directory).
const maxKnownUsers = 200_000

func newKnownUsers(ttl time.Duration) *knownUsers {
	return &knownUsers{ttl: ttl, until: map[userKey]time.Time{}}
}

// known reports a live "exists" answer.
func (k *knownUsers) known(tenant string, user int64, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	until, ok := k.until[userKey{tenant, user}]
	return ok && now.Before(until)
}

// remember keeps that the directory found the user at now.
func (k *knownUsers) remember(tenant string, user int64, now time.Time) {
	if k.ttl <= 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.until) >= maxKnownUsers {
		for key, until := range k.until {
			if !now.Before(until) {
				delete(k.until, key)
			}
		}
		if len(k.until) >= maxKnownUsers {
			k.until = map[userKey]time.Time{}
		}
	}
	k.until[userKey{tenant, user}] = now.Add(k.ttl)
}
