package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// MonthState is an in-memory ports.MonthState with the rules of the Redis one: active_month
// only moves forward and only into a ready month. Its clock stands in for Redis TIME.
type MonthState struct {
	clock func() time.Time

	mu      sync.Mutex
	tenants map[string]*tenantMonths
}

var _ ports.MonthState = (*MonthState)(nil)

type tenantMonths struct {
	active month.Month // 0 while none is active
	ready  map[month.Month]bool
	// switchTo, when set, is the early switch scheduled for switchAt (SwitchAt).
	switchTo month.Month
	switchAt time.Time
}

// NewMonthState returns an empty month state whose Now is clock.
func NewMonthState(clock func() time.Time) *MonthState {
	return &MonthState{clock: clock, tenants: map[string]*tenantMonths{}}
}

// MarkReady lets active_month move to m.
func (s *MonthState) MarkReady(_ context.Context, name string, m month.Month) error {
	if err := validTenantMonth(name, m); err != nil {
		return fmt.Errorf("mark month ready: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.of(name).ready[m] = true
	return nil
}

// Active reads the active month; found=false when none was ever activated.
func (s *MonthState) Active(_ context.Context, name string) (month.Month, bool, error) {
	if !tenant.Valid(name) {
		return 0, false, fmt.Errorf("active month: invalid tenant %q", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	active := s.of(name).active
	return active, active != 0, nil
}

// Advance moves active_month forward to m if m is ready and returns the resulting active month
// (zero when none).
func (s *MonthState) Advance(_ context.Context, name string, m month.Month) (month.Month, error) {
	if err := validTenantMonth(name, m); err != nil {
		return 0, fmt.Errorf("advance month: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dueSwitchLocked(name)
	return s.advanceLocked(name, m), nil
}

// SwitchAt schedules an early switch to m at at, or makes it at once when at has passed.
func (s *MonthState) SwitchAt(_ context.Context, name string, m month.Month, at time.Time) (month.Month, error) {
	if err := validTenantMonth(name, m); err != nil {
		return 0, fmt.Errorf("schedule month switch: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.of(name)
	switch {
	case t.active >= m: // never backward (and 0, none active, is below every month)
	case !s.clock().Before(at):
		s.advanceLocked(name, m)
	case m > t.switchTo:
		t.switchTo, t.switchAt = m, at
	case m == t.switchTo && at.Before(t.switchAt):
		t.switchAt = at
	}
	return t.active, nil
}

// Now is the injected clock, in UTC like Redis TIME.
func (s *MonthState) Now(context.Context) (time.Time, error) { return s.clock().UTC(), nil }

// activeFor raises a present active month to floor (when valid), applies the advance rule to
// the month of the clock (or override when valid) and returns the resulting active month, as
// the seq script does: zero while none is active.
func (s *MonthState) activeFor(name string, override, floor month.Month) month.Month {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.of(name)
	if t.active == 0 {
		// Never picked from the clock: a lost active month may have been ahead of it.
		return 0
	}
	s.dueSwitchLocked(name)
	if floor.Valid() && floor > t.active {
		t.ready[floor] = true
		t.active = floor
	}
	target := month.Of(s.clock())
	if override.Valid() {
		target = override
	}
	return s.advanceLocked(name, target)
}

// dueSwitchLocked applies the scheduled switch once the clock has reached its instant.
func (s *MonthState) dueSwitchLocked(name string) {
	t := s.of(name)
	if t.switchTo == 0 || s.clock().Before(t.switchAt) {
		return
	}
	s.advanceLocked(name, t.switchTo)
	t.switchTo, t.switchAt = 0, time.Time{}
}

func (s *MonthState) advanceLocked(name string, target month.Month) month.Month {
	t := s.of(name)
	if target > t.active && t.ready[target] {
		t.active = target
	}
	return t.active
}

func (s *MonthState) of(name string) *tenantMonths {
	return stateOf(s.tenants, name, func() *tenantMonths { return &tenantMonths{ready: map[month.Month]bool{}} })
}

func validTenantMonth(name string, m month.Month) error {
	if !tenant.Valid(name) {
		return fmt.Errorf("invalid tenant %q", name)
	}
	if !m.Valid() {
		return fmt.Errorf("%w: %d", month.ErrInvalid, m)
	}
	return nil
}

// Forget drops the active and ready months of a tenant, as a Redis FLUSHALL would.
func (s *MonthState) Forget(name string) {
	s.mu.Lock()
	delete(s.tenants, name)
	s.mu.Unlock()
}

// ForceActive sets the active month to m, even backward, as a failover to a Redis replica that
// missed the last writes would.
func (s *MonthState) ForceActive(name string, m month.Month) {
	s.mu.Lock()
	s.of(name).active = m
	s.mu.Unlock()
}
