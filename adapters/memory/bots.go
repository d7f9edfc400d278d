package memory

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/bot"
	"github.com/imdhq/imd/ports"
)

// Bots is the in-memory bot registry.
type Bots struct {
	mu      sync.Mutex
	tenants map[string]map[int64]bot.Bot
}

var _ ports.Bots = (*Bots)(nil)

// NewBots returns an empty registry.
func NewBots() *Bots { return &Bots{tenants: make(map[string]map[int64]bot.Bot)} }

// CreateBot records b once.
func (s *Bots) CreateBot(_ context.Context, tenant string, b bot.Bot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.tenants[tenant]
	if all == nil {
		all = make(map[int64]bot.Bot)
		s.tenants[tenant] = all
	}
	if _, ok := all[b.UserID]; ok {
		return apperr.New(apperr.Conflict, "bot exists")
	}
	all[b.UserID] = b
	return nil
}

// Bot reads the bot userID.
func (s *Bots) Bot(_ context.Context, tenant string, userID int64) (bot.Bot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.tenants[tenant][userID]
	if !ok {
		return bot.Bot{}, bot.ErrNotFound
	}
	return b, nil
}

// Bots lists the tenant's bots by user id.
func (s *Bots) Bots(_ context.Context, tenant string) ([]bot.Bot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.tenants[tenant]
	out := make([]bot.Bot, 0, len(all))
	for _, id := range slices.Sorted(maps.Keys(all)) {
		out = append(out, all[id])
	}
	return out, nil
}

// DeleteBot forgets that userID is a bot.
func (s *Bots) DeleteBot(_ context.Context, tenant string, userID int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tenants[tenant][userID]; !ok {
		return bot.ErrNotFound
	}
	delete(s.tenants[tenant], userID)
	return nil
}
