package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// MonthState is ports.MonthState: the ready_months SET, active_month STRING and switch_month
// HASH of each slot group of each tenant, under the group's hash tag beside its topics' seq
// counters (DESIGN §11), so the seq script reads them in one slot.
type MonthState struct {
	c rueidis.Client
}

var _ ports.MonthState = (*MonthState)(nil)

// NewMonthState returns the month state on c.
func NewMonthState(c rueidis.Client) *MonthState { return &MonthState{c: c} }

// Groups is SlotGroups.
func (s *MonthState) Groups() int { return SlotGroups }

// GroupOf is TopicGroup: the group of the topic's seq counter.
func (s *MonthState) GroupOf(topic string) int { return TopicGroup(topic) }

// MarkReady adds m to the group's ready_months, which lets its seq script switch to it.
func (s *MonthState) MarkReady(ctx context.Context, tenant string, group int, m month.Month) error {
	k, err := keysOfMonth(tenant, group, m)
	if err != nil {
		return fmt.Errorf("mark month ready: %w", err)
	}
	if err := s.c.Do(ctx, s.c.B().Sadd().Key(k.ReadyMonths()).Member(m.String()).Build()).Error(); err != nil {
		return fmt.Errorf("mark %s ready in group %d of %s: %w", m, group, tenant, err)
	}
	return nil
}

// Active reads every group's active_month, in one pipeline (the groups lie on any master), and
// returns the newest; found=false when no group has one.
func (s *MonthState) Active(ctx context.Context, tenant string) (month.Month, bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return 0, false, fmt.Errorf("active month: %w", err)
	}
	cmds := make(rueidis.Commands, SlotGroups)
	for g := range cmds {
		cmds[g] = s.c.B().Get().Key(k.Group(g).ActiveMonth()).Build()
	}
	var newest month.Month
	for g, r := range s.c.DoMulti(ctx, cmds...) {
		v, err := r.ToString()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return 0, false, fmt.Errorf("active month of group %d of %s: %w", g, tenant, err)
		}
		m, err := month.Parse(v)
		if err != nil {
			return 0, false, fmt.Errorf("active month of group %d of %s: %w", g, tenant, err)
		}
		newest = max(newest, m)
	}
	return newest, newest != 0, nil
}

// advanceScript returns the active month after a due scheduled switch and the advance rule,
// or an empty string when none is active.
// KEYS: active_month, ready_months, switch_month. ARGV: target month.
var advanceScript = rueidis.NewLuaScript(luaAdvance + luaDueSwitch + luaTimeMs + `
local active = due_switch(KEYS[1], KEYS[2], KEYS[3], redis.call('GET', KEYS[1]), time_ms())
return advance(KEYS[1], KEYS[2], ARGV[1], active) or ''
`)

// switchAtScript schedules an early switch, or makes it when its instant has passed; it
// returns the active month after the call, or an empty string when none is active.
// KEYS: active_month, ready_months, switch_month. ARGV: target month, instant in Redis TIME ms.
var switchAtScript = rueidis.NewLuaScript(luaAdvance + luaTimeMs + `
local active = redis.call('GET', KEYS[1])
local target, at = ARGV[1], tonumber(ARGV[2])
if active and tonumber(active) >= tonumber(target) then
  return active
end
if time_ms() >= at then
  return advance(KEYS[1], KEYS[2], target, active) or ''
end
local s = redis.call('HMGET', KEYS[3], 'month', 'at')
if not s[1] or tonumber(s[1]) < tonumber(target) then
  redis.call('HSET', KEYS[3], 'month', target, 'at', ARGV[2])
elseif s[1] == target and at < tonumber(s[2]) then
  redis.call('HSET', KEYS[3], 'at', ARGV[2])
end
return active or ''
`)

// Advance moves the group's active_month forward to m if m is ready there; never backward. It
// returns the resulting active month, the zero Month when still none is active.
func (s *MonthState) Advance(ctx context.Context, tenant string, group int, m month.Month) (month.Month, error) {
	k, err := keysOfMonth(tenant, group, m)
	if err != nil {
		return 0, fmt.Errorf("advance month: %w", err)
	}
	active, err := activeOf(advanceScript.Exec(ctx, s.c, []string{k.ActiveMonth(), k.ReadyMonths(), k.SwitchMonth()}, []string{m.String()}))
	if err != nil {
		return 0, fmt.Errorf("advance group %d of %s to %s: %w", group, tenant, m, err)
	}
	return active, nil
}

// SwitchAt schedules an early switch of the group to m at at (ports.MonthState.SwitchAt).
func (s *MonthState) SwitchAt(ctx context.Context, tenant string, group int, m month.Month, at time.Time) (month.Month, error) {
	k, err := keysOfMonth(tenant, group, m)
	if err != nil {
		return 0, fmt.Errorf("schedule month switch: %w", err)
	}
	active, err := activeOf(switchAtScript.Exec(ctx, s.c, []string{k.ActiveMonth(), k.ReadyMonths(), k.SwitchMonth()},
		[]string{m.String(), strconv.FormatInt(at.UnixMilli(), 10)}))
	if err != nil {
		return 0, fmt.Errorf("schedule the switch of group %d of %s to %s at %s: %w", group, tenant, m, at.Format(time.RFC3339Nano), err)
	}
	return active, nil
}

// activeOf reads a script's reply of the active month, the empty string for none.
func activeOf(r rueidis.RedisResult) (month.Month, error) {
	v, err := r.ToString()
	if err != nil || v == "" {
		return 0, err
	}
	return month.Parse(v)
}

// Now is Redis TIME: one clock for every node, so nodes with skewed clocks agree on the month.
func (s *MonthState) Now(ctx context.Context) (time.Time, error) {
	v, err := s.c.Do(ctx, s.c.B().Time().Build()).AsStrSlice()
	if err != nil {
		return time.Time{}, fmt.Errorf("redis time: %w", err)
	}
	if len(v) != 2 {
		return time.Time{}, fmt.Errorf("redis time: %d fields, want 2", len(v))
	}
	sec, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("redis time seconds %q: %w", v[0], err)
	}
	usec, err := strconv.ParseInt(v[1], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("redis time microseconds %q: %w", v[1], err)
	}
	return time.Unix(sec, usec*int64(time.Microsecond)).UTC(), nil
}

// keysOfMonth is the key builder of one group's month state, once tenant, group and month are
// checked.
func keysOfMonth(tenant string, group int, m month.Month) (Keys, error) {
	if !m.Valid() {
		return Keys{}, fmt.Errorf("%w: %d", month.ErrInvalid, m)
	}
	if group < 0 || group >= SlotGroups {
		return Keys{}, fmt.Errorf("slot group %d out of [0, %d)", group, SlotGroups)
	}
	k, err := KeysOf(tenant)
	if err != nil {
		return Keys{}, err
	}
	return k.Group(group), nil
}
