package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/bot"
	"github.com/imdhq/imd/ports"
)

// Bots implements ports.Bots over t_bots (0016).
type Bots struct{ cluster *Cluster }

var _ ports.Bots = (*Bots)(nil)

// NewBots returns the bot registry of the provisioned tenants of c.
func NewBots(c *Cluster) *Bots { return &Bots{cluster: c} }

// CreateBot inserts b; its user id taken by a bot already is apperr.Conflict.
func (s *Bots) CreateBot(ctx context.Context, tenant string, b bot.Bot) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	err = t.q.InsertBot(ctx, sqlcdb.InsertBotParams{UserID: b.UserID, Name: b.Name, CreatedAt: b.CreatedAt.UTC().Truncate(time.Millisecond)})
	if isDuplicate(err, "") {
		return apperr.New(apperr.Conflict, "bot exists")
	}
	if err != nil {
		return fmt.Errorf("create bot %d: %w", b.UserID, err)
	}
	return nil
}

// Bot reads the bot userID.
func (s *Bots) Bot(ctx context.Context, tenant string, userID int64) (bot.Bot, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return bot.Bot{}, err
	}
	r, err := t.q.Bot(ctx, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return bot.Bot{}, bot.ErrNotFound
	}
	if err != nil {
		return bot.Bot{}, fmt.Errorf("read bot %d: %w", userID, err)
	}
	return botOf(r), nil
}

// Bots lists the tenant's bots by user id.
func (s *Bots) Bots(ctx context.Context, tenant string) ([]bot.Bot, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.Bots(ctx)
	if err != nil {
		return nil, fmt.Errorf("list bots: %w", err)
	}
	out := make([]bot.Bot, len(rows))
	for i, r := range rows {
		out[i] = botOf(r)
	}
	return out, nil
}

func botOf(r sqlcdb.TBot) bot.Bot {
	return bot.Bot{UserID: r.UserID, Name: r.Name, CreatedAt: r.CreatedAt.UTC()}
}

// DeleteBot deletes the bot's row; its user stays.
func (s *Bots) DeleteBot(ctx context.Context, tenant string, userID int64) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	n, err := t.q.DeleteBot(ctx, userID)
	if err != nil {
		return fmt.Errorf("delete bot %d: %w", userID, err)
	}
	if n == 0 {
		return bot.ErrNotFound
	}
	return nil
}
