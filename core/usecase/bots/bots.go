// Package bots makes and lists a tenant's bot accounts for the admin API (docs/DESIGN.md
// issue-32 part 2 "Bots"): a bot is a user of the tenant with a long-lived token, shown once.
package bots

import (
	"context"
	"fmt"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/bot"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// TokenTTL is a bot token's life: a program runs unattended, so a year, the longest token the
// admin API issues; a fresh one comes from POST .../bots/{id}/token.
const TokenTTL = 365 * 24 * time.Hour

// Users is what the service needs of the directory.
type Users interface {
	UserStatus(ctx context.Context, tenant string, userID int64) (social.UserStatus, error)
	CreateUser(ctx context.Context, tenant string, u social.User) error
}

// Issuer is what the service needs of ports.Tokens.
type Issuer interface {
	Issue(id auth.Identity, ttl time.Duration) (string, error)
}

// Revoker denies every token of a user issued until now (authn.Service.RevokeUser).
type Revoker interface {
	RevokeUser(ctx context.Context, tenant string, user int64) (time.Time, error)
}

// Deps are the ports the service uses.
type Deps struct {
	Users     Users
	Bots      ports.Bots
	Tokens    Issuer
	Revoker   Revoker
	Sessions  ports.UserSessions // nil: no live connection to close (tests)
	Endpoints ports.WebhookEndpoints
	Clock     ports.Clock
}

// Service makes bots and their tokens.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service { return &Service{d: d} }

// Create makes user b.UserID (named b.Name) a bot and returns it with its token: the only
// answer that carries one. The user is made when it does not exist; an existing active user
// becomes the bot, so a create that failed halfway is finished by the next. A deleted user
// or a bot already made is 40901.
func (s *Service) Create(ctx context.Context, tenant string, userID int64, name string) (bot.Bot, string, error) {
	b := bot.Bot{UserID: userID, Name: name, CreatedAt: s.d.Clock.Now().UTC()}
	if err := b.Validate(); err != nil {
		return bot.Bot{}, "", err
	}
	st, err := s.d.Users.UserStatus(ctx, tenant, userID)
	if err != nil {
		return bot.Bot{}, "", apperr.Wrap(apperr.Busy, "directory unavailable", err)
	}
	if st == social.UserDeleted {
		return bot.Bot{}, "", apperr.New(apperr.Conflict, "the user was deleted; its id is not reused")
	}
	if st == social.UserUnknown {
		if err := s.d.Users.CreateUser(ctx, tenant, social.User{ID: userID, Nickname: name}); err != nil {
			return bot.Bot{}, "", apperr.Wrap(apperr.Busy, "create the bot's user", err)
		}
	}
	if err := s.d.Bots.CreateBot(ctx, tenant, b); err != nil {
		if apperr.CodeOf(err) == apperr.Conflict {
			return bot.Bot{}, "", apperr.New(apperr.Conflict, "a bot with this id exists; POST .../token for a new token")
		}
		return bot.Bot{}, "", apperr.Wrap(apperr.Busy, "bot store unavailable", err)
	}
	tok, err := s.issue(tenant, userID)
	return b, tok, err
}

// Token issues a fresh token for bot userID (the old one stays valid until it expires, or
// until the operator deletes the bot's user).
func (s *Service) Token(ctx context.Context, tenant string, userID int64) (string, error) {
	if _, err := s.Get(ctx, tenant, userID); err != nil {
		return "", err
	}
	return s.issue(tenant, userID)
}

// Get reads bot userID.
func (s *Service) Get(ctx context.Context, tenant string, userID int64) (bot.Bot, error) {
	b, err := s.d.Bots.Bot(ctx, tenant, userID)
	if err != nil && apperr.CodeOf(err) != apperr.NotFound {
		return bot.Bot{}, apperr.Wrap(apperr.Busy, "bot store unavailable", err)
	}
	return b, err
}

// Delete stops bot userID (docs/DESIGN.md issue-32 part 2 "Bots"): every token it was issued
// is revoked and its connections closed, then its bot record goes. Its user stays, as the
// author of what it sent (an operator deletes the user as any other, DESIGN §8.1). A webhook
// endpoint still bound to it is 40901: it would otherwise go on receiving what the bot may
// read. A failure part way leaves the bot listed, so the operator deletes it again.
func (s *Service) Delete(ctx context.Context, tenant string, userID int64) error {
	if _, err := s.Get(ctx, tenant, userID); err != nil {
		return err
	}
	eps, err := s.d.Endpoints.Endpoints(ctx, tenant)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "webhook endpoints unavailable", err)
	}
	for _, e := range eps {
		if e.BotID == userID {
			return apperr.New(apperr.Conflict, fmt.Sprintf("webhook endpoint %d is bound to this bot; delete it or bind it elsewhere first", e.ID))
		}
	}
	if _, err := s.d.Revoker.RevokeUser(ctx, tenant, userID); err != nil {
		return err
	}
	if s.d.Sessions != nil {
		if err := s.d.Sessions.EndUser(ctx, tenant, userID, "bot deleted"); err != nil {
			return apperr.Wrap(apperr.Busy, "the bot's tokens are revoked, but not every node was told to close its connections; retry", err)
		}
	}
	if err := s.d.Bots.DeleteBot(ctx, tenant, userID); err != nil && apperr.CodeOf(err) != apperr.NotFound {
		return apperr.Wrap(apperr.Busy, "bot store unavailable", err)
	}
	return nil
}

// List reads the tenant's bots.
func (s *Service) List(ctx context.Context, tenant string) ([]bot.Bot, error) {
	bs, err := s.d.Bots.Bots(ctx, tenant)
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "bot store unavailable", err)
	}
	return bs, nil
}

func (s *Service) issue(tenant string, userID int64) (string, error) {
	tok, err := s.d.Tokens.Issue(auth.Identity{Tenant: tenant, UserID: userID}, TokenTTL)
	if err != nil {
		return "", apperr.Wrap(apperr.Internal, "token issue failed", err)
	}
	return tok, nil
}
