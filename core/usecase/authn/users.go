package authn

import (
	"sync"
	"time"
)

// knownUsers is the process's memory of the users the directory said are active, so that
// checking a token's user costs a map lookup on most AUTHs and HTTP requests (issue 33). Only
// "active" is kept: a user created (or enabled) just after a refusal is accepted at once. An
// answer lives ttl, the bound on how long a user disabled or deleted keeps authenticating on a
// node nobody told; forget, what a node does when told, drops it at once.
type knownUsers struct {
	ttl time.Duration
	mu  sync.Mutex
	// gen counts forgets: an answer read from the directory before one of them may predate
	// the change it announces and is not kept.
	gen   uint64
	until map[userKey]time.Time
}

// maxKnownUsers bounds the memory: past it, expired answers are dropped, and if that is not
// enough, all of them (the next checks read the directory).
const maxKnownUsers = 200_000

func newKnownUsers(ttl time.Duration) *knownUsers {
	return &knownUsers{ttl: ttl, until: map[userKey]time.Time{}}
}

// known reports a live "active" answer, and the generation a remember of a fresh one must
// match.
func (k *knownUsers) known(tenant string, user int64, now time.Time) (gen uint64, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	until, ok := k.until[userKey{tenant, user}]
	return k.gen, ok && now.Before(until)
}

// remember keeps that the directory found the user active at now, unless a forget came since
// the read began (gen): then it reports false, and the answer must not be used.
func (k *knownUsers) remember(tenant string, user int64, now time.Time, gen uint64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if gen != k.gen {
		return false
	}
	if k.ttl <= 0 {
		return true
	}
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
	return true
}

// forget drops the answer about the user.
func (k *knownUsers) forget(tenant string, user int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen++
	delete(k.until, userKey{tenant, user})
}
