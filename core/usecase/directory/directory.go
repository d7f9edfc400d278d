// Package directory runs the social graph use cases (issue 6): profiles, friendships with
// requests, blocks, groups with roles, membership changes and mutes. Every change invalidates
// what the resolver caches for sends, and tells the users concerned through their mailbox.
package directory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"unicode/utf8"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/objectkey"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

// Operator is the actor of admin API calls: it is not a user and passes every role check.
const Operator int64 = 0

// Limits of the use cases.
const (
	MaxPage          = 200
	MaxGroupMembers  = 100_000
	MaxCreateMembers = 500 // per client call; bigger groups are built by adding members
	MaxGroupName     = 128
)

// Deps are the ports and services the directory uses.
type Deps struct {
	Directory ports.Directory
	Profiles  ports.Profiles
	Friends   ports.Friends
	Blocks    ports.Blocks
	Groups    ports.Groups
	Resolver  *conversation.Resolver
	IDs       ports.IDGenerator
	Clock     ports.Clock
	// Events posts friend and membership events to the mailboxes of the users concerned; nil
	// posts none (the change still takes effect).
	Events ports.ControlEvents
	// Topics writes group-wide events (mute-all) into the group's topic, once for all members
	// (DESIGN §1); nil writes none.
	Topics TopicPublisher
	// Dialogs takes a group off a removed member's conversation lists; nil leaves the lists to
	// the next rebuild.
	Dialogs ports.DialogRemover
	// Sessions closes the connections of a user disabled or deleted on every node and makes the
	// nodes forget it may authenticate; nil leaves that to authn's UserTTL.
	Sessions ports.UserSessions
	Log      *slog.Logger
}

// TopicPublisher writes an event into a topic through the send path (core/usecase/send.Service).
type TopicPublisher interface {
	Publish(ctx context.Context, e send.Event) (send.Result, error)
}

// Service is the social graph use cases.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service { return &Service{d: d} }

// Profile reads a user's profile.
func (s *Service) Profile(ctx context.Context, tenant string, user int64) (social.Profile, error) {
	p, err := s.d.Profiles.Profile(ctx, tenant, user)
	if errors.Is(err, social.ErrNotFound) {
		return social.Profile{}, apperr.New(apperr.NotFound, "user not found")
	}
	return p, busy("read profile", err)
}

// UpdateProfile changes the user's nickname and avatar (an object key of the tenant, or empty).
func (s *Service) UpdateProfile(ctx context.Context, tenant string, p social.Profile) error {
	if utf8.RuneCountInString(p.Nickname) > social.MaxNickname || !utf8.ValidString(p.Nickname) {
		return apperr.New(apperr.InvalidArgument, fmt.Sprintf("nickname must be valid UTF-8 of at most %d characters", social.MaxNickname))
	}
	if p.Avatar != "" && (!objectkey.Valid(p.Avatar) || objectkey.Tenant(p.Avatar) != tenant) {
		return apperr.New(apperr.InvalidArgument, "avatar must be an uploaded object key")
	}
	err := s.d.Profiles.UpdateProfile(ctx, tenant, p)
	if errors.Is(err, social.ErrNotFound) {
		return apperr.New(apperr.NotFound, "user not found")
	}
	return busy("update profile", err)
}

// RequireUsers fails with 40001 for an id that is not positive and with 40401 naming the
// first unknown user. The admin use cases check users the same way.
func RequireUsers(ctx context.Context, users ports.Directory, tenant string, ids ...int64) error {
	for _, id := range ids {
		if id <= 0 {
			return apperr.New(apperr.InvalidArgument, "user ids must be positive")
		}
		ok, err := users.UserExists(ctx, tenant, id)
		if err != nil {
			return busy("look up user", err)
		}
		if !ok {
			return apperr.New(apperr.NotFound, fmt.Sprintf("user %d not found", id))
		}
	}
	return nil
}

func pageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return 50, nil
	case limit < 0 || limit > MaxPage:
		return 0, apperr.New(apperr.InvalidArgument, fmt.Sprintf("limit must be 1-%d", MaxPage))
	}
	return limit, nil
}

func uniqueIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
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
