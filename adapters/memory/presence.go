package memory

import (
	"context"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// Presence is an in-memory ports.PresenceRecords and ports.UserSettings with the MySQL
// adapter's rules: last_seen never moves back, settings are stored whole.
type Presence struct {
	mu       sync.Mutex
	seen     map[string]time.Time       // tenant\x00user
	settings map[string]social.Settings // tenant\x00user
}

var (
	_ ports.PresenceRecords = (*Presence)(nil)
	_ ports.UserSettings    = (*Presence)(nil)
)

// NewPresence returns empty records.
func NewPresence() *Presence {
	return &Presence{seen: map[string]time.Time{}, settings: map[string]social.Settings{}}
}

// Records implements ports.PresenceRecords.
func (p *Presence) Records(_ context.Context, tenant string, users []int64) (map[int64]presence.Record, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[int64]presence.Record, len(users))
	for _, u := range users {
		k := userKey(tenant, u)
		at, seen := p.seen[k]
		s, set := p.settings[k]
		if seen || set && s.HidePresence {
			out[u] = presence.Record{LastSeen: at, Hidden: s.HidePresence}
		}
	}
	return out, nil
}

// Seen implements ports.PresenceRecords; stored at millisecond precision, as in MySQL.
func (p *Presence) Seen(_ context.Context, tenant string, user int64, at time.Time) error {
	at = time.UnixMilli(at.UnixMilli())
	p.mu.Lock()
	defer p.mu.Unlock()
	if k := userKey(tenant, user); at.After(p.seen[k]) {
		p.seen[k] = at
	}
	return nil
}

// Settings implements ports.UserSettings.
func (p *Presence) Settings(_ context.Context, tenant string, user int64) (social.Settings, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.settings[userKey(tenant, user)], nil
}

// ChangeSettings implements ports.UserSettings.
func (p *Presence) ChangeSettings(_ context.Context, tenant string, user int64, c social.SettingsChange) (social.Settings, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := userKey(tenant, user)
	p.settings[k] = p.settings[k].With(c)
	return p.settings[k], nil
}
