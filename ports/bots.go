package ports

import (
	"context"

	"github.com/imdhq/imd/core/domain/bot"
)

// Bots keeps which users of a tenant are bots (docs/DESIGN.md issue-32 part 2 "Bots").
type Bots interface {
	// CreateBot records b; a bot already recorded under b.UserID is apperr.Conflict.
	CreateBot(ctx context.Context, tenant string, b bot.Bot) error
	// Bot fails with bot.ErrNotFound for a user that is no bot.
	Bot(ctx context.Context, tenant string, userID int64) (bot.Bot, error)
	// Bots lists the tenant's bots by user id.
	Bots(ctx context.Context, tenant string) ([]bot.Bot, error)
	// DeleteBot removes the record that userID is a bot; bot.ErrNotFound when it is none.
	DeleteBot(ctx context.Context, tenant string, userID int64) error
}
