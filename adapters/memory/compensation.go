package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// CompensationList is an in-memory ports.CompensationList. Entries go through JSON like in
// Redis, so what does not survive encoding does not survive here either.
type CompensationList struct {
	mu      sync.Mutex
	tenants map[string]*compensations
}

var _ ports.CompensationList = (*CompensationList)(nil)

type compensations struct {
	entries [][]byte
	ids     map[int64]bool
}

// NewCompensationList returns an empty list.
func NewCompensationList() *CompensationList {
	return &CompensationList{tenants: map[string]*compensations{}}
}

func (l *CompensationList) of(name string) *compensations {
	return stateOf(l.tenants, name, func() *compensations { return &compensations{ids: map[int64]bool{}} })
}

// Push appends c unless its msg_id is listed.
func (l *CompensationList) Push(_ context.Context, name string, c ports.Compensation) (bool, error) {
	if !tenant.Valid(name) {
		return false, fmt.Errorf("push compensation: invalid tenant %q", name)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return false, fmt.Errorf("encode compensation of msg %d: %w", c.Message.MsgID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.of(name)
	if t.ids[c.Message.MsgID] {
		return false, nil
	}
	t.ids[c.Message.MsgID] = true
	t.entries = append(t.entries, raw)
	return true, nil
}

// List returns the oldest limit entries.
func (l *CompensationList) List(_ context.Context, name string, limit int) ([]ports.Compensation, error) {
	if !tenant.Valid(name) {
		return nil, fmt.Errorf("list compensation: invalid tenant %q", name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	entries := l.of(name).entries
	entries = entries[:min(len(entries), max(limit, 0))]
	out := make([]ports.Compensation, len(entries))
	for i, raw := range entries {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("compensation entry %d: %w", i, err)
		}
	}
	return out, nil
}

// Len is the number of entries.
func (l *CompensationList) Len(_ context.Context, name string) (int64, error) {
	if !tenant.Valid(name) {
		return 0, fmt.Errorf("compensation length: invalid tenant %q", name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.of(name).entries)), nil
}
