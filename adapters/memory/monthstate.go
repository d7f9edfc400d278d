package memory

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// MonthState is an in-memory ports.MonthState with the rules of the Redis one: each slot
// group's active_month only moves forward and only into a month ready in that group. Its clock
// stands in for Redis TIME.
type MonthState struct {
	clock  func() time.Time
	groups int

	mu      sync.Mutex
	tenants map[tenantGroup]*tenantMonths
}

// tenantGroup names one slot group's copy of a tenant's month state.
type tenantGroup struct {
	tenant string
	group  int
}

var _ ports.MonthState = (*MonthState)(nil)

type tenantMonths struct {
	active month.Month // 0 while none is active
	ready  map[month.Month]bool
	// switchTo, when set, is the early switch scheduled for switchAt (SwitchAt).
	switchTo month.Month
	switchAt time.Time
}

// NewMonthState returns an empty month state of one slot group whose Now is clock.
func NewMonthState(clock func() time.Time) *MonthState { return NewGroupedMonthState(clock, 1) }

// NewGroupedMonthState returns an empty month state of groups slot groups (at least one), as
// the Redis one keeps 64, so that tests and the simulator can lose or roll back one group's
// copy alone.
func NewGroupedMonthState(clock func() time.Time, groups int) *MonthState {
	return &MonthState{clock: clock, groups: max(groups, 1), tenants: map[tenantGroup]*tenantMonths{}}
}

// Groups is the number of slot groups.
func (s *MonthState) Groups() int { return s.groups }

// GroupOf spreads topics over the groups by the hash the deliver partitions use: any spread
// every caller agrees on will do.
func (s *MonthState) GroupOf(topicName string) int { return delivery.PartitionOf(topicName, s.groups) }

// MarkReady lets the group's active_month move to m.
func (s *MonthState) MarkReady(_ context.Context, name string, group int, m month.Month) error {
	g, err := s.validGroupMonth(name, group, m)
	if err != nil {
		return fmt.Errorf("mark month ready: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.of(g).ready[m] = true
	return nil
}

// Active is the newest active month of the groups; found=false when none has one.
func (s *MonthState) Active(_ context.Context, name string) (month.Month, bool, error) {
	if !tenant.Valid(name) {
		return 0, false, fmt.Errorf("active month: invalid tenant %q", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var newest month.Month
	for g := range s.groups {
		if t, ok := s.tenants[tenantGroup{name, g}]; ok {
			newest = max(newest, t.active)
		}
	}
	return newest, newest != 0, nil
}

// Advance moves the group's active_month forward to m if m is ready there and returns the
// resulting active month (zero when none).
func (s *MonthState) Advance(_ context.Context, name string, group int, m month.Month) (month.Month, error) {
	g, err := s.validGroupMonth(name, group, m)
	if err != nil {
		return 0, fmt.Errorf("advance month: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dueSwitchLocked(g)
	return s.advanceLocked(g, m), nil
}

// SwitchAt schedules an early switch of the group to m at at, or makes it at once when at has
// passed.
func (s *MonthState) SwitchAt(_ context.Context, name string, group int, m month.Month, at time.Time) (month.Month, error) {
	g, err := s.validGroupMonth(name, group, m)
	if err != nil {
		return 0, fmt.Errorf("schedule month switch: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.of(g)
	switch {
	case t.active >= m: // never backward (and 0, none active, is below every month)
	case !s.clock().Before(at):
		s.advanceLocked(g, m)
	case m > t.switchTo:
		t.switchTo, t.switchAt = m, at
	case m == t.switchTo && at.Before(t.switchAt):
		t.switchAt = at
	}
	return t.active, nil
}

// Now is the injected clock, in UTC like Redis TIME.
func (s *MonthState) Now(context.Context) (time.Time, error) { return s.clock().UTC(), nil }

// activeFor raises the topic's group's present active month to floor (when valid), applies
// the advance rule to the month of the clock (or override when valid) and returns the
// resulting active month, as the seq script does: zero while none is active.
func (s *MonthState) activeFor(name, topicName string, override, floor month.Month) month.Month {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := tenantGroup{name, s.GroupOf(topicName)}
	t := s.of(g)
	if t.active == 0 {
		// Never picked from the clock: a lost active month may have been ahead of it.
		return 0
	}
	s.dueSwitchLocked(g)
	if floor.Valid() && floor > t.active {
		t.ready[floor] = true
		t.active = floor
	}
	target := month.Of(s.clock())
	if override.Valid() {
		target = override
	}
	return s.advanceLocked(g, target)
}

// dueSwitchLocked applies the group's scheduled switch once the clock has reached its instant.
func (s *MonthState) dueSwitchLocked(g tenantGroup) {
	t := s.of(g)
	if t.switchTo == 0 || s.clock().Before(t.switchAt) {
		return
	}
	s.advanceLocked(g, t.switchTo)
	t.switchTo, t.switchAt = 0, time.Time{}
}

func (s *MonthState) advanceLocked(g tenantGroup, target month.Month) month.Month {
	t := s.of(g)
	if target > t.active && t.ready[target] {
		t.active = target
	}
	return t.active
}

func (s *MonthState) of(g tenantGroup) *tenantMonths {
	return stateOf(s.tenants, g, func() *tenantMonths { return &tenantMonths{ready: map[month.Month]bool{}} })
}

func (s *MonthState) validGroupMonth(name string, group int, m month.Month) (tenantGroup, error) {
	if !tenant.Valid(name) {
		return tenantGroup{}, fmt.Errorf("invalid tenant %q", name)
	}
	if !m.Valid() {
		return tenantGroup{}, fmt.Errorf("%w: %d", month.ErrInvalid, m)
	}
	if group < 0 || group >= s.groups {
		return tenantGroup{}, fmt.Errorf("slot group %d out of [0, %d)", group, s.groups)
	}
	return tenantGroup{name, group}, nil
}

// Forget drops the active and ready months of a tenant's every group, as a Redis FLUSHALL
// would.
func (s *MonthState) Forget(name string) {
	s.mu.Lock()
	maps.DeleteFunc(s.tenants, func(g tenantGroup, _ *tenantMonths) bool { return g.tenant == name })
	s.mu.Unlock()
}

// ForceActive sets every group's active month to m, even backward, as a failover to a Redis
// replica that missed the last writes would.
func (s *MonthState) ForceActive(name string, m month.Month) {
	for g := range s.groups {
		s.ForceGroupActive(name, g, m)
	}
}

// ForceGroupActive sets one group's active month to m, even backward: a failover of the one
// master that holds the group's slot.
func (s *MonthState) ForceGroupActive(name string, group int, m month.Month) {
	s.mu.Lock()
	s.of(tenantGroup{name, group}).active = m
	s.mu.Unlock()
}
