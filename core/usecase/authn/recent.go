package authn

import (
	"sync"
	"time"
)

// recentChecks is the process's own memory of what the deny-list answered, so a per-request
// check costs a map lookup. It lives in the process, not in Redis: a Redis that is rolled back
// or flushed cannot bring back a "not revoked" answer taken before a logout. A "not revoked"
// answer lives ttl — the bound on how long a revocation made on another node goes unseen here;
// a revocation made through this process drops the answers it overturns at once.
type recentChecks struct {
	ttl time.Duration
	mu  sync.Mutex
	// gen counts this process's revocations: an answer read from MySQL before one of them
	// may predate it and is not kept.
	gen   uint64
	users map[userKey]map[string]recentAnswer // by user, then token id
	size  int
}

// maxRecentChecks bounds the memory: past it, expired answers are dropped, and if that is not
// enough, all of them (the next checks read MySQL).
const maxRecentChecks = 200_000

type userKey struct {
	tenant string
	user   int64
}

type recentAnswer struct {
	revoked bool
	cutoff  time.Time
	until   time.Time
}

func newRecentChecks(ttl time.Duration) *recentChecks {
	return &recentChecks{ttl: ttl, users: map[userKey]map[string]recentAnswer{}}
}

// lookup returns a live answer, and the generation a fill of a fresh answer must match.
func (r *recentChecks) lookup(tenant, tokenID string, user int64, now time.Time) (a recentAnswer, found bool, gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, found = r.users[userKey{tenant, user}][tokenID]
	return a, found && now.Before(a.until), r.gen
}

// fill keeps an answer read from MySQL unless this process revoked something since the read
// began (gen). A revoked token stays revoked until it expires, so that answer lives as long.
func (r *recentChecks) fill(tenant, tokenID string, user int64, revoked bool, cutoff, now, expires time.Time, gen uint64) {
	if r.ttl <= 0 {
		return
	}
	until := now.Add(r.ttl)
	if revoked {
		until = expires
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen {
		return
	}
	if r.size >= maxRecentChecks {
		r.dropExpired(now)
	}
	k := userKey{tenant, user}
	tokens := r.users[k]
	if tokens == nil {
		tokens = map[string]recentAnswer{}
		r.users[k] = tokens
	}
	if _, ok := tokens[tokenID]; !ok {
		r.size++
	}
	tokens[tokenID] = recentAnswer{revoked: revoked, cutoff: cutoff, until: until}
}

func (r *recentChecks) dropExpired(now time.Time) {
	for k, tokens := range r.users {
		for id, a := range tokens {
			if !now.Before(a.until) {
				delete(tokens, id)
				r.size--
			}
		}
		if len(tokens) == 0 {
			delete(r.users, k)
		}
	}
	if r.size >= maxRecentChecks {
		r.users, r.size = map[userKey]map[string]recentAnswer{}, 0
	}
}

// forgetToken and forgetUser drop the answers a revocation through this process overturns;
// called after the deny-list holds it.
func (r *recentChecks) forgetToken(tenant, tokenID string, user int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	k := userKey{tenant, user}
	if _, ok := r.users[k][tokenID]; ok {
		delete(r.users[k], tokenID)
		r.size--
	}
}

func (r *recentChecks) forgetUser(tenant string, user int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	k := userKey{tenant, user}
	r.size -= len(r.users[k])
	delete(r.users, k)
}
