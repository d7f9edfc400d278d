// Package admin holds the operator use cases behind the admin API (PROTOCOL §6): users,
// tokens, friendships, groups, shards, routes and statistics of one tenant.
package admin

import (
	"context"
	"errors"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/ports"
)

// Token lifetimes.
const (
	DefaultTokenTTL = 7 * 24 * time.Hour
	MaxTokenTTL     = 365 * 24 * time.Hour
)

// Deps are the ports admin uses.
type Deps struct {
	Directory ports.Directory
	Tokens    ports.Tokens
	// Routes rebuilds a topic's Redis route from the mirror, checking that no concurrent
	// commit was lost (core/loop/routerepair).
	Routes  RouteRebuilder
	Shards  ports.ShardStore
	Manager *shardmanager.Manager
	// Social makes friendships and groups the way users do, so caches and mailboxes follow.
	Social *directory.Service
	// Summaries feeds Stats from the route mirror, never from counting month tables.
	Summaries ports.Summaries
	// Tenants reports whether a tenant is served by this process.
	Tenants ports.KnownTenant
	// Tables tells whether an archived month's table is still there; nil reports none dropped.
	Tables TableChecker
}

// TableChecker is the part of ports.MonthRows the shard listing needs.
type TableChecker interface {
	TableExists(ctx context.Context, tenant string, m month.Month) (bool, error)
}

// Service is the admin use cases.
type Service struct{ d Deps }

// New returns the admin service.
func New(d Deps) *Service { return &Service{d: d} }

// CheckTenant refuses unknown tenants, so no request reaches another tenant's data.
func (s *Service) CheckTenant(tenant string) error {
	if !s.d.Tenants(tenant) {
		return apperr.New(apperr.NotFound, "unknown tenant")
	}
	return nil
}

// CreateUser registers a user; creating an existing user again is harmless.
func (s *Service) CreateUser(ctx context.Context, tenant string, u social.User) error {
	if u.ID <= 0 {
		return apperr.New(apperr.InvalidArgument, "user_id must be positive")
	}
	if len(u.Nickname) > 64 {
		return apperr.New(apperr.InvalidArgument, "nickname too long")
	}
	// A deleted user's id is never given out again (DESIGN §8.1); the store would keep it deleted, so say so instead of answering 200.
	st, err := s.d.Directory.UserStatus(ctx, tenant, u.ID)
	if err != nil {
		return busy("read user status", err)
	}
	if st == social.UserDeleted {
		return apperr.New(apperr.Conflict, "the user was deleted; its id is not reused")
	}
	return busy("create user", s.d.Directory.CreateUser(ctx, tenant, u))
}

// IssueToken mints a client token for an existing user.
func (s *Service) IssueToken(ctx context.Context, tenant string, userID int64, ttl time.Duration) (string, error) {
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	if ttl < 0 || ttl > MaxTokenTTL {
		return "", apperr.New(apperr.InvalidArgument, "ttl_seconds out of range")
	}
	if err := directory.RequireUsers(ctx, s.d.Directory, tenant, userID); err != nil {
		return "", err
	}
	tok, err := s.d.Tokens.Issue(auth.Identity{Tenant: tenant, UserID: userID}, ttl)
	if err != nil {
		return "", apperr.Wrap(apperr.Internal, "token issue failed", err)
	}
	return tok, nil
}

// AddFriendship makes two existing users friends, so they may talk P2P.
func (s *Service) AddFriendship(ctx context.Context, tenant string, a, b int64) error {
	return s.d.Social.AddFriendship(ctx, tenant, a, b)
}

// CreateGroup creates a group whose members include the owner.
func (s *Service) CreateGroup(ctx context.Context, tenant string, groupID, owner int64, members []int64) (social.Conversation, error) {
	return s.d.Social.CreateGroup(ctx, tenant, directory.Operator, directory.NewGroup{ID: groupID, Owner: owner, Members: members})
}

// Shards lists the catalog of month tables.
func (s *Service) Shards(ctx context.Context, tenant string) ([]shard.Info, error) {
	infos, err := s.d.Shards.Catalog(ctx, tenant)
	if err != nil {
		return nil, busy("read catalog", err)
	}
	// The catalog keeps an archived month's row after its table is dropped.
	for i, in := range infos {
		if in.State != shard.Archived || s.d.Tables == nil {
			continue
		}
		exists, err := s.d.Tables.TableExists(ctx, tenant, in.Month)
		if err != nil {
			return nil, busy("look for the table of "+in.Month.String(), err)
		}
		infos[i].TableDropped = !exists
	}
	return infos, nil
}

// AdvanceMonth prepares a month and moves the active month forward to it.
func (s *Service) AdvanceMonth(ctx context.Context, tenant, raw string) (month.Month, error) {
	m, err := month.Parse(raw)
	if err != nil {
		return 0, apperr.New(apperr.InvalidArgument, "month must be YYYYMM")
	}
	return s.d.Manager.Advance(ctx, tenant, m)
}

// RebuildRoute rewrites a topic's Redis route from the MySQL mirror (seed 000 §12.16).
func (s *Service) RebuildRoute(ctx context.Context, tenant, name string) (route.Route, error) {
	if _, err := topic.Parse(name); err != nil {
		return nil, apperr.New(apperr.InvalidArgument, "invalid topic")
	}
	rt, err := s.d.Routes.Rebuild(ctx, tenant, name)
	if err != nil {
		return nil, busy("rebuild route", err)
	}
	return rt, nil
}

// RouteRebuilder rebuilds one topic's Redis route from the MySQL mirror.
type RouteRebuilder interface {
	Rebuild(ctx context.Context, tenant, topic string) (route.Route, error)
}

// busy maps a dependency failure to 50301, keeping contract errors as they are.
func busy(what string, err error) error {
	if err == nil {
		return nil
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return err
	}
	return apperr.Wrap(apperr.Busy, what+" failed", err)
}
