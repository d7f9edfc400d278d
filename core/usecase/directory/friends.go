package directory

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
)

// Friends lists a user's friends above after.
func (s *Service) Friends(ctx context.Context, tenant string, user, after int64, limit int) ([]int64, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	ids, err := s.d.Friends.Friends(ctx, tenant, user, after, limit)
	return ids, busy("list friends", err)
}

// FriendRequests lists the pending requests to (incoming) or from the user.
func (s *Service) FriendRequests(ctx context.Context, tenant string, user int64, incoming bool, limit int) ([]social.FriendRequest, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	rs, err := s.d.Friends.FriendRequests(ctx, tenant, user, incoming, limit)
	return rs, busy("list friend requests", err)
}

// RequestFriend asks to to become from's friend. When to had asked from already, the two
// requests meet and the friendship is made at once (friends=true). Blocked pairs cannot ask.
func (s *Service) RequestFriend(ctx context.Context, tenant string, from, to int64, message string) (friends bool, err error) {
	if from == to {
		return false, apperr.New(apperr.InvalidArgument, "a user cannot befriend themself")
	}
	if utf8.RuneCountInString(message) > social.MaxRequestMessage || !utf8.ValidString(message) {
		return false, apperr.New(apperr.InvalidArgument, "message must be valid UTF-8 of at most 255 characters")
	}
	if err := RequireUsers(ctx, s.d.Directory, tenant, from, to); err != nil {
		return false, err
	}
	rel, err := s.d.Resolver.Relation(ctx, tenant, from, to)
	if err != nil {
		return false, err
	}
	switch {
	case rel.Blocked:
		return false, apperr.New(apperr.Forbidden, "blocked")
	case rel.Friends:
		return true, nil
	}
	err = s.d.Friends.AcceptFriendRequest(ctx, tenant, to, from)
	if err == nil {
		s.befriended(ctx, tenant, from, to, "accepted")
		return true, nil
	}
	if !errors.Is(err, social.ErrNotFound) {
		return false, busy("accept friend request", err)
	}
	req := social.FriendRequest{From: from, To: to, Message: message, CreatedAt: s.d.Clock.Now().UTC()}
	if err := s.d.Friends.RequestFriend(ctx, tenant, req); err != nil {
		return false, busy("request friend", err)
	}
	s.post(ctx, tenant, []notice{friendNotice(to, "request", from)})
	return false, nil
}

// AcceptFriend accepts the pending request from → user.
func (s *Service) AcceptFriend(ctx context.Context, tenant string, user, from int64) error {
	// A request left by a user deleted since is not accepted (DESIGN §8.1).
	if err := RequireUsers(ctx, s.d.Directory, tenant, from); err != nil {
		return err
	}
	err := s.d.Friends.AcceptFriendRequest(ctx, tenant, from, user)
	if errors.Is(err, social.ErrNotFound) {
		return apperr.New(apperr.NotFound, "no pending friend request from this user")
	}
	if err != nil {
		return busy("accept friend request", err)
	}
	s.befriended(ctx, tenant, user, from, "accepted")
	return nil
}

// DeleteFriendRequest declines the request other → user or withdraws user → other.
func (s *Service) DeleteFriendRequest(ctx context.Context, tenant string, user, other int64) error {
	declined, err := s.d.Friends.DeleteFriendRequest(ctx, tenant, other, user)
	if err != nil {
		return busy("delete friend request", err)
	}
	withdrawn, err := s.d.Friends.DeleteFriendRequest(ctx, tenant, user, other)
	if err != nil {
		return busy("delete friend request", err)
	}
	if !declined && !withdrawn {
		return apperr.New(apperr.NotFound, "no pending friend request between these users")
	}
	return nil
}

// AddFriendship makes two existing users friends without a request (admin).
func (s *Service) AddFriendship(ctx context.Context, tenant string, a, b int64) error {
	if a == b {
		return apperr.New(apperr.InvalidArgument, "a user cannot befriend themself")
	}
	if err := RequireUsers(ctx, s.d.Directory, tenant, a, b); err != nil {
		return err
	}
	if err := s.d.Directory.AddFriendship(ctx, tenant, a, b); err != nil {
		return busy("add friendship", err)
	}
	s.befriended(ctx, tenant, a, b, "added")
	return nil
}

// RemoveFriend ends user's friendship with other; P2P sends between the two stop at once on
// this node.
func (s *Service) RemoveFriend(ctx context.Context, tenant string, user, other int64) error {
	return s.unfriend(ctx, tenant, user, user, other)
}

// RemoveFriendship ends the friendship of a and b (admin).
func (s *Service) RemoveFriendship(ctx context.Context, tenant string, a, b int64) error {
	return s.unfriend(ctx, tenant, Operator, a, b)
}

// unfriend ends the friendship of user and other by actor (Operator or user), the actor its
// friendship.changed event names (issue 32).
func (s *Service) unfriend(ctx context.Context, tenant string, actor, user, other int64) error {
	if user == other || other <= 0 {
		return apperr.New(apperr.InvalidArgument, "invalid user_id")
	}
	if err := s.d.Friends.RemoveFriendship(ctx, tenant, user, other, actor); err != nil {
		return busy("remove friendship", err)
	}
	s.d.Resolver.InvalidatePair(tenant, user, other)
	// Both learn it: the remover's other devices too.
	s.post(ctx, tenant, []notice{friendNotice(other, "removed", user), friendNotice(user, "removed", other)})
	return nil
}

// befriended invalidates the pair's cached relation and tells both users.
func (s *Service) befriended(ctx context.Context, tenant string, a, b int64, action string) {
	s.d.Resolver.InvalidatePair(tenant, a, b)
	s.post(ctx, tenant, []notice{friendNotice(a, action, b), friendNotice(b, action, a)})
}

// Block stops P2P sends between user and other, both ways.
func (s *Service) Block(ctx context.Context, tenant string, user, other int64) error {
	if user == other {
		return apperr.New(apperr.InvalidArgument, "a user cannot block themself")
	}
	if err := RequireUsers(ctx, s.d.Directory, tenant, other); err != nil {
		return err
	}
	if err := s.d.Blocks.Block(ctx, tenant, user, other); err != nil {
		return busy("block", err)
	}
	// The blocked user is not told.
	s.d.Resolver.InvalidatePair(tenant, user, other)
	return nil
}

// Unblock lifts user's block of other.
func (s *Service) Unblock(ctx context.Context, tenant string, user, other int64) error {
	if user == other || other <= 0 {
		return apperr.New(apperr.InvalidArgument, "invalid user_id")
	}
	if err := s.d.Blocks.Unblock(ctx, tenant, user, other); err != nil {
		return busy("unblock", err)
	}
	s.d.Resolver.InvalidatePair(tenant, user, other)
	return nil
}

// Blocked lists whom user blocked.
func (s *Service) Blocked(ctx context.Context, tenant string, user int64) ([]int64, error) {
	ids, err := s.d.Blocks.Blocked(ctx, tenant, user)
	return ids, busy("list blocks", err)
}
