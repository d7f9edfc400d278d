package directory

import (
	"context"
	"errors"
	"fmt"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
)

// The KICK reasons of PROTOCOL §3 for the connections of a user an operator disabled or
// deleted: neither should reconnect, AUTH would answer 40101.
const (
	KickDisabled = "disabled"
	KickDeleted  = "deleted"
)

// UserStatus reads a user's status (admin); a user never created is 40401.
func (s *Service) UserStatus(ctx context.Context, tenant string, user int64) (social.UserStatus, error) {
	st, err := s.d.Directory.UserStatus(ctx, tenant, user)
	if err != nil {
		return social.UserUnknown, busy("read user status", err)
	}
	if st == social.UserUnknown {
		return st, apperr.New(apperr.NotFound, "user not found")
	}
	return st, nil
}

// DisableUser stops a user from authenticating until EnableUser, and closes its connections on
// every node (KICK disabled). Everything else it has stays: memberships, friendships, messages,
// and what is sent to it meanwhile, which it syncs when enabled. Disabling again is harmless
// and ends the sessions again: the retry after a node was not told (50301).
func (s *Service) DisableUser(ctx context.Context, tenant string, user int64) error {
	if err := s.setStatus(ctx, tenant, user, social.UserDisabled); err != nil {
		return err
	}
	return s.endSessions(ctx, tenant, user, KickDisabled)
}

// EnableUser lets a disabled user authenticate again, with the tokens it already has. Nodes need
// not be told: they keep only "active" answers, and read the directory after a refusal.
func (s *Service) EnableUser(ctx context.Context, tenant string, user int64) error {
	return s.setStatus(ctx, tenant, user, social.UserActive)
}

// DeleteUser deletes a user for good (DESIGN §8.1): its
// row stays with status deleted, so the id is never reused and its messages keep their sender;
// it no longer authenticates and its connections are closed on every node (KICK deleted); its
// friendships end, with the friend events its friends would get from a removal; it leaves
// every group; P2P sends to it are 40401. Its messages stay in their conversations: a
// message is written once into its topic, for every member (seed 003 §9.4, DESIGN §1), and
// the other side's history does not change. A user who owns a group is 40901 before anything
// changes: the operator hands the group over first, as a leaving owner does. Deleting again
// redoes what a failed attempt left, and is the retry after a 50301.
func (s *Service) DeleteUser(ctx context.Context, tenant string, user int64) error {
	if _, err := s.UserStatus(ctx, tenant, user); err != nil {
		return err
	}
	if err := s.forEachGroup(ctx, tenant, user, func(c social.Conversation, m social.Member) error {
		if m.Role == social.RoleOwner {
			return apperr.New(apperr.Conflict, fmt.Sprintf("the user owns group %d; transfer the ownership first", c.GroupID))
		}
		return nil
	}); err != nil {
		return err
	}
	if err := s.setStatus(ctx, tenant, user, social.UserDeleted); err != nil {
		return err
	}
	// The sessions end before the cleanup: nothing the user still holds open acts meanwhile.
	ended := s.endSessions(ctx, tenant, user, KickDeleted)
	if err := s.endFriendships(ctx, tenant, user); err != nil {
		return err
	}
	if err := s.forEachGroup(ctx, tenant, user, func(c social.Conversation, m social.Member) error {
		if m.Role == social.RoleOwner { // handed to the user since the check
			return apperr.New(apperr.Conflict, fmt.Sprintf("the user owns group %d; transfer the ownership, then delete again", c.GroupID))
		}
		if err := s.d.Groups.RemoveMembers(ctx, tenant, c.GroupID, []int64{user}, Operator); err != nil {
			return busy("remove member", err)
		}
		s.d.Resolver.InvalidateGroup(tenant, c.Topic)
		s.forgetDialog(ctx, tenant, user, c)
		return nil
	}); err != nil {
		return err
	}
	return ended
}

func (s *Service) setStatus(ctx context.Context, tenant string, user int64, st social.UserStatus) error {
	err := s.d.Directory.SetUserStatus(ctx, tenant, user, st)
	switch {
	case errors.Is(err, social.ErrNotFound):
		return apperr.New(apperr.NotFound, "user not found")
	case errors.Is(err, social.ErrUserDeleted):
		return apperr.New(apperr.Conflict, "the user was deleted, which is final")
	}
	return busy("set user status", err)
}

// endSessions tells every node; a node not told is 50301, so the operator retries (the status
// is stored already; a node not told stops accepting the user within authn's UserTTL anyway).
func (s *Service) endSessions(ctx context.Context, tenant string, user int64, reason string) error {
	if s.d.Sessions == nil {
		return nil
	}
	if err := s.d.Sessions.EndUser(ctx, tenant, user, reason); err != nil {
		return apperr.Wrap(apperr.Busy, "the user's status is stored, but not every node was told to close its connections; retry", err)
	}
	return nil
}

// endFriendships removes every friendship of the user, a page at a time.
func (s *Service) endFriendships(ctx context.Context, tenant string, user int64) error {
	for after := int64(0); ; {
		friends, err := s.d.Friends.Friends(ctx, tenant, user, after, MaxPage)
		if err != nil {
			return busy("list friends", err)
		}
		for _, f := range friends {
			if err := s.unfriend(ctx, tenant, Operator, user, f); err != nil {
				return err
			}
			after = f
		}
		if len(friends) < MaxPage {
			return nil
		}
	}
}

// forEachGroup calls fn with each group of the user and its membership there, a page at a
// time; fn may remove the membership.
func (s *Service) forEachGroup(ctx context.Context, tenant string, user int64, fn func(social.Conversation, social.Member) error) error {
	for after := int64(0); ; {
		cs, err := s.d.Groups.UserConversations(ctx, tenant, user, social.KindGroup, after, MaxPage)
		if err != nil {
			return busy("list groups", err)
		}
		for _, c := range cs {
			after = c.ID
			m, err := s.d.Groups.GroupMember(ctx, tenant, c.GroupID, user)
			if errors.Is(err, social.ErrNotFound) {
				continue // left meanwhile
			}
			if err != nil {
				return busy("read member", err)
			}
			if err := fn(c, m); err != nil {
				return err
			}
		}
		if len(cs) < MaxPage {
			return nil
		}
	}
}
