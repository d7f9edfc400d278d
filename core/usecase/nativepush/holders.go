package nativepush

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/ports"
)

// HoldersConfig tunes the node's set of token holders; zero fields take the defaults.
type HoldersConfig struct {
	// Refresh is how often each tenant's set reads the tokens registered since its last read
	// (on other nodes too); default 30s.
	Refresh time.Duration
	// Reload is how often it reads every holder instead, so users whose last token was
	// removed elsewhere leave it; default 10 minutes.
	Reload time.Duration
}

func (c HoldersConfig) withDefaults() HoldersConfig {
	c.Refresh = orDefault(c.Refresh, 30*time.Second)
	c.Reload = orDefault(c.Reload, 10*time.Minute)
	return c
}

// holdersOverlap re-reads the tokens registered a while before the last read began: a row
// written by a node whose clock is behind, or committed while the read ran, is still seen.
const holdersOverlap = time.Minute

// Holders is the node's set, per tenant, of the users holding at least one push token: the
// ack wait and the group acks cost something only for them, as only they can get an alert
// (DESIGN issue-32 "Native push", "Only token holders pay for it"). A tenant's set is loaded
// in the background on its first use; until then its users count as token-less. This node's
// registrations and removals change it at once, other nodes' by the next Refresh (a removal
// by the next Reload). A nil Holders holds nobody: the ack wait is off.
type Holders struct {
	cfg    HoldersConfig
	tokens ports.PushTokens
	clock  ports.Clock
	log    *slog.Logger

	mu      sync.RWMutex
	tenants map[string]*holderSet
	wake    chan struct{} // a tenant to load first
}

type holderSet struct {
	users   map[int64]struct{}
	loaded  bool
	readAt  time.Time // the start of the last read
	fullAt  time.Time // the start of the last read of every holder
	reading bool
	added   map[int64]struct{} // registered here while a read ran: kept past a full read
}

// NewHolders returns the set; Run loads and refreshes it.
func NewHolders(cfg HoldersConfig, tokens ports.PushTokens, clock ports.Clock, log *slog.Logger) *Holders {
	return &Holders{cfg: cfg.withDefaults(), tokens: tokens, clock: clock, log: log,
		tenants: make(map[string]*holderSet), wake: make(chan struct{}, 1)}
}

// Has reports whether user holds a push token. In memory only: it is asked on the deliver
// and PUSH_ACK paths. A tenant's first question starts its load and is answered false.
func (h *Holders) Has(tenant string, user int64) bool {
	if h == nil {
		return false
	}
	h.mu.RLock()
	s, known := h.tenants[tenant]
	ok := false
	if known {
		_, ok = s.users[user]
	}
	h.mu.RUnlock()
	if !known {
		h.mu.Lock()
		h.set(tenant)
		h.mu.Unlock()
	}
	return ok
}

// set returns the tenant's set, made (and its load asked of Run) when it has none; h.mu held.
func (h *Holders) set(tenant string) *holderSet {
	s, ok := h.tenants[tenant]
	if !ok {
		s = &holderSet{users: make(map[int64]struct{}), added: make(map[int64]struct{})}
		h.tenants[tenant] = s
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
	return s
}

// Added: user registered a token on this node.
func (h *Holders) Added(tenant string, user int64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.set(tenant)
	s.users[user] = struct{}{}
	if s.reading {
		s.added[user] = struct{}{}
	}
}

// Removed: user removed their last token on this node.
func (h *Holders) Removed(tenant string, user int64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.tenants[tenant]; ok {
		delete(s.users, user)
		delete(s.added, user)
	}
}

// Run loads each tenant's set when first asked for and refreshes every set each Refresh,
// until ctx ends. A nil Holders returns at once.
func (h *Holders) Run(ctx context.Context) {
	if h == nil {
		return
	}
	t := time.NewTicker(h.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
			h.Refresh(ctx, false)
		case <-t.C:
			h.Refresh(ctx, true)
		}
	}
}

// Refresh reads the sets due: the tenants never loaded, and with all, every other one too
// (since its last read, or whole once Reload has passed). Run calls it, one call at a time.
func (h *Holders) Refresh(ctx context.Context, all bool) {
	h.mu.RLock()
	tenants := slices.Sorted(maps.Keys(h.tenants))
	h.mu.RUnlock()
	for _, tenant := range tenants {
		if ctx.Err() != nil {
			return
		}
		h.load(ctx, tenant, all)
	}
}

// load reads one tenant's holders, whole when it was never loaded or Reload has passed.
func (h *Holders) load(ctx context.Context, tenant string, all bool) {
	now := h.clock.Now()
	h.mu.Lock()
	s := h.tenants[tenant]
	if s.loaded && !all {
		h.mu.Unlock()
		return
	}
	full := !s.loaded || now.Sub(s.fullAt) >= h.cfg.Reload
	var since time.Time
	if !full {
		since = s.readAt.Add(-holdersOverlap)
	}
	s.reading = true
	h.mu.Unlock()

	users, err := h.tokens.UsersWithTokens(ctx, tenant, since)

	h.mu.Lock()
	defer h.mu.Unlock()
	s.reading = false
	if err != nil {
		// Kept as it was, and read again next round: until then a new holder elsewhere gets
		// no ack wait, as before the load.
		h.log.WarnContext(ctx, "push token holders not read", "tenant", tenant, "full", full, "err", err)
		return
	}
	if full {
		s.users = make(map[int64]struct{}, len(users)+len(s.added))
		maps.Copy(s.users, s.added)
		s.fullAt, s.loaded = now, true
	}
	clear(s.added)
	for _, u := range users {
		s.users[u] = struct{}{}
	}
	s.readAt = now
}
