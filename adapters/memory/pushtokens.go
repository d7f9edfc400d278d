package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/pushtoken"
	"github.com/imdhq/imd/ports"
)

// PushTokens is the in-memory push token table.
type PushTokens struct {
	mu     sync.Mutex
	tokens map[string][]pushtoken.Token // by tenant
	dead   map[string][]pushtoken.DeadLetter
}

var _ ports.PushTokens = (*PushTokens)(nil)

// NewPushTokens returns an empty table.
func NewPushTokens() *PushTokens {
	return &PushTokens{tokens: make(map[string][]pushtoken.Token), dead: make(map[string][]pushtoken.DeadLetter)}
}

// PutToken replaces the device's token.
func (s *PushTokens) PutToken(_ context.Context, tenant string, t pushtoken.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := slices.DeleteFunc(s.tokens[tenant], func(o pushtoken.Token) bool { return o.User == t.User && o.DeviceID == t.DeviceID })
	s.tokens[tenant] = append(all, t)
	return nil
}

// DeleteToken removes the device's token.
func (s *PushTokens) DeleteToken(_ context.Context, tenant string, user int64, deviceID string) (bool, error) {
	return s.remove(tenant, func(o pushtoken.Token) bool { return o.User == user && o.DeviceID == deviceID }), nil
}

// DeleteTokenValue removes every registration of the token.
func (s *PushTokens) DeleteTokenValue(_ context.Context, tenant string, platform pushtoken.Platform, token string) error {
	s.remove(tenant, func(o pushtoken.Token) bool { return o.Platform == platform && o.Token == token })
	return nil
}

func (s *PushTokens) remove(tenant string, match func(pushtoken.Token) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.tokens[tenant])
	s.tokens[tenant] = slices.DeleteFunc(s.tokens[tenant], match)
	return len(s.tokens[tenant]) < n
}

// TokensOf lists the users' tokens by user and device.
func (s *PushTokens) TokensOf(_ context.Context, tenant string, users []int64) ([]pushtoken.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []pushtoken.Token
	for _, t := range s.tokens[tenant] {
		if slices.Contains(users, t.User) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b pushtoken.Token) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.DeviceID, b.DeviceID))
	})
	return out, nil
}

// UsersWithTokens lists the users of the tokens updated since.
func (s *PushTokens) UsersWithTokens(_ context.Context, tenant string, since time.Time) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for _, t := range s.tokens[tenant] {
		if !t.UpdatedAt.Before(since) {
			out = append(out, t.User)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// AddDeadLetter appends d with the next id.
func (s *PushTokens) AddDeadLetter(_ context.Context, tenant string, d pushtoken.DeadLetter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.ID = int64(len(s.dead[tenant]) + 1)
	s.dead[tenant] = append(s.dead[tenant], d)
	return nil
}

// DeadLetters lists the provider's newest first.
func (s *PushTokens) DeadLetters(_ context.Context, tenant string, provider pushtoken.Platform, limit int) ([]pushtoken.DeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []pushtoken.DeadLetter
	for _, d := range slices.Backward(s.dead[tenant]) {
		if d.Provider == provider && len(out) < limit {
			out = append(out, d)
		}
	}
	return out, nil
}
