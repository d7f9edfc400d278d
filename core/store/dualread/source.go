// Package dualread merges the legacy single table into every read of the month tables while a
// migration is configured (seed 000 §9 steps 3 and 9). It decorates the ports the query paths
// read through — MessageStore, MessageSearch, MessageFinder — and MessageEditor, so history,
// context, search, READ and admin reads need no change: each month's answer is the month
// table's rows plus the legacy rows created in that month that the month table does not hold
// yet, merged by (topic, seq) with the month table winning. Results are therefore the same
// before, during and after the backfill copies the rows.
package dualread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/ports"
)

// DefaultStatusTTL is how long a tenant's legacy status is trusted before it is read again.
// Finish retires the table on one node; the others notice within this time (and at once if a
// read finds the table gone).
const DefaultStatusTTL = 2 * time.Second

// Source is the legacy table of every tenant and a short cache of whether to read it.
type Source struct {
	legacy ports.LegacyMessages
	clock  ports.Clock
	ttl    time.Duration
	log    *slog.Logger

	mu     sync.Mutex
	status map[string]cachedStatus
}

type cachedStatus struct {
	st legacy.Status
	at time.Time
}

// NewSource returns a source over l; ttl ≤ 0 takes DefaultStatusTTL.
func NewSource(l ports.LegacyMessages, clock ports.Clock, ttl time.Duration, log *slog.Logger) *Source {
	if ttl <= 0 {
		ttl = DefaultStatusTTL
	}
	return &Source{legacy: l, clock: clock, ttl: ttl, log: log, status: make(map[string]cachedStatus)}
}

// current returns the tenant's legacy status, from the cache while it is fresh.
func (s *Source) current(ctx context.Context, tenant string) (legacy.Status, error) {
	now := s.clock.Now()
	s.mu.Lock()
	c, ok := s.status[tenant]
	s.mu.Unlock()
	if ok && now.Sub(c.at) < s.ttl {
		return c.st, nil
	}
	st, err := s.legacy.Status(ctx, tenant)
	if err != nil {
		return legacy.Status{}, fmt.Errorf("legacy status of %s: %w", tenant, err)
	}
	s.mu.Lock()
	s.status[tenant] = cachedStatus{st: st, at: now}
	s.mu.Unlock()
	return st, nil
}

// active reports whether the tenant's reads merge the legacy table.
func (s *Source) active(ctx context.Context, tenant string) (bool, error) {
	st, err := s.current(ctx, tenant)
	return st.DualRead(), err
}

// gone handles a legacy read's error: legacy.ErrGone means finish retired the table, after
// every row was copied and verified, so the read goes on without it (gone=true) and the
// tenant's status is read again next time.
func (s *Source) gone(ctx context.Context, tenant string, err error) bool {
	if !errors.Is(err, legacy.ErrGone) {
		return false
	}
	s.mu.Lock()
	delete(s.status, tenant)
	s.mu.Unlock()
	s.log.InfoContext(ctx, "legacy table retired during a read; reading month tables only", "tenant", tenant)
	return true
}
