package directory

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
)

// MaxMute bounds a per-member mute.
const MaxMute = 366 * 24 * time.Hour

// NewGroup describes a group to create.
type NewGroup struct {
	ID      int64 // 0: the server picks one
	Owner   int64
	Name    string
	Members []int64 // besides the owner
}

// CreateGroup creates a group whose members include the owner. A user creating a group owns
// it and may list at most MaxCreateMembers others; operators name any owner.
func (s *Service) CreateGroup(ctx context.Context, tenant string, actor int64, g NewGroup) (social.Conversation, error) {
	if actor != Operator {
		g.Owner = actor
		if len(g.Members) > MaxCreateMembers {
			return social.Conversation{}, apperr.New(apperr.InvalidArgument, fmt.Sprintf("at most %d members at creation; add more later", MaxCreateMembers))
		}
	}
	if g.ID < 0 || (actor == Operator && g.ID == 0) {
		return social.Conversation{}, apperr.New(apperr.InvalidArgument, "group_id must be positive")
	}
	if utf8.RuneCountInString(g.Name) > MaxGroupName || !utf8.ValidString(g.Name) {
		return social.Conversation{}, apperr.New(apperr.InvalidArgument, fmt.Sprintf("name must be valid UTF-8 of at most %d characters", MaxGroupName))
	}
	all := uniqueIDs(append([]int64{g.Owner}, g.Members...))
	if len(all) > MaxGroupMembers {
		return social.Conversation{}, apperr.New(apperr.InvalidArgument, "too many members")
	}
	if err := RequireUsers(ctx, s.d.Directory, tenant, all...); err != nil {
		return social.Conversation{}, err
	}
	if g.ID == 0 {
		id, err := s.d.IDs.NextID()
		if err != nil {
			return social.Conversation{}, apperr.Wrap(apperr.Busy, "id generation failed", err)
		}
		g.ID = id
	}
	if _, err := s.d.Directory.Conversation(ctx, tenant, topic.ForGroup(g.ID)); err == nil {
		return social.Conversation{}, apperr.New(apperr.Conflict, "group already exists")
	} else if !errors.Is(err, social.ErrNotFound) {
		return social.Conversation{}, busy("look up group", err)
	}
	convID, err := s.d.IDs.NextID()
	if err != nil {
		return social.Conversation{}, apperr.Wrap(apperr.Busy, "id generation failed", err)
	}
	c, err := s.d.Directory.CreateGroup(ctx, tenant, social.Group{ID: g.ID, Owner: g.Owner, Name: g.Name}, convID, all, actor)
	if err != nil {
		return social.Conversation{}, busy("create group", err)
	}
	s.d.Resolver.InvalidateGroup(tenant, c.Topic)
	// Everyone but a creating user learns of it; an operator is not a user (By stays 0).
	notices := make([]notice, 0, len(all))
	for _, u := range all {
		if u != actor {
			notices = append(notices, memberNotice(u, c, memberEvent{Action: "added", By: actor}))
		}
	}
	s.post(ctx, tenant, notices)
	return c, nil
}

// Group reads a group; users must be members.
func (s *Service) Group(ctx context.Context, tenant string, actor, groupID int64) (social.GroupInfo, error) {
	if _, err := s.actorMember(ctx, tenant, actor, groupID); err != nil {
		return social.GroupInfo{}, err
	}
	g, err := s.d.Groups.Group(ctx, tenant, groupID)
	if errors.Is(err, social.ErrNotFound) {
		return social.GroupInfo{}, apperr.New(apperr.NotFound, "group not found")
	}
	return g, busy("read group", err)
}

// Members pages a group's members; users must be members.
func (s *Service) Members(ctx context.Context, tenant string, actor, groupID, after int64, limit int) ([]social.Member, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	if _, err := s.actorMember(ctx, tenant, actor, groupID); err != nil {
		return nil, err
	}
	ms, err := s.d.Groups.GroupMembers(ctx, tenant, groupID, after, limit)
	if errors.Is(err, social.ErrNotFound) {
		return nil, apperr.New(apperr.NotFound, "group not found")
	}
	return ms, busy("list members", err)
}

// AddMembers adds existing users to a group; users must be its owner or an admin.
func (s *Service) AddMembers(ctx context.Context, tenant string, actor, groupID int64, users []int64) error {
	users = uniqueIDs(users)
	if groupID <= 0 || len(users) == 0 || len(users) > MaxGroupMembers {
		return apperr.New(apperr.InvalidArgument, "group_id and 1-100000 user_ids are required")
	}
	c, err := s.groupConversation(ctx, tenant, groupID)
	if err != nil {
		return err
	}
	if err := s.requireManager(ctx, tenant, actor, groupID); err != nil {
		return err
	}
	if err := RequireUsers(ctx, s.d.Directory, tenant, users...); err != nil {
		return err
	}
	if err := s.d.Directory.AddMembers(ctx, tenant, c.Topic, users, actor); err != nil {
		return busy("add members", err)
	}
	s.d.Resolver.InvalidateGroup(tenant, c.Topic)
	notices := make([]notice, len(users))
	for i, u := range users {
		notices[i] = memberNotice(u, c, memberEvent{Action: "added", By: actor})
	}
	s.post(ctx, tenant, notices)
	return nil
}

// RemoveMember removes user from a group: a member leaving, or a manager removing someone it
// outranks (the owner anyone, an admin plain members). The owner never leaves: a group keeps
// its owner, who hands it over first (TransferOwnership).
func (s *Service) RemoveMember(ctx context.Context, tenant string, actor, groupID, user int64) error {
	c, err := s.groupConversation(ctx, tenant, groupID)
	if err != nil {
		return err
	}
	target, err := s.member(ctx, tenant, groupID, user)
	if err != nil {
		return err
	}
	if target.Role == social.RoleOwner {
		return apperr.New(apperr.Forbidden, "the owner cannot leave or be removed; transfer the ownership first")
	}
	if actor != user {
		if err := s.requireOutrank(ctx, tenant, actor, groupID, target); err != nil {
			return err
		}
	}
	if err := s.d.Groups.RemoveMembers(ctx, tenant, groupID, []int64{user}, actor); err != nil {
		return busy("remove member", err)
	}
	// From here the removed user can neither send nor sync on this node.
	s.d.Resolver.InvalidateGroup(tenant, c.Topic)
	s.forgetDialog(ctx, tenant, user, c)
	s.post(ctx, tenant, []notice{memberNotice(user, c, memberEvent{Action: "removed", By: actor})})
	return nil
}

// forgetDialog takes the group off the removed user's conversation lists. Like the events, it
// runs after the change committed and a failure is only logged: a retry of the removal would
// find no member left, and a list rebuild from MySQL leaves the group out anyway. A message
// fanned out just before the removal can still bring the dialog back; its messages stay
// unreadable to the user, whose syncs the membership check refuses.
func (s *Service) forgetDialog(ctx context.Context, tenant string, user int64, c social.Conversation) {
	if s.d.Dialogs == nil {
		return
	}
	if err := s.d.Dialogs.RemoveDialog(ctx, tenant, user, c.ID); err != nil {
		s.d.Log.ErrorContext(ctx, "removed member's dialog not dropped", "tenant", tenant, "user_id", user, "topic", c.Topic, "err", err)
	}
}

// TransferOwnership hands a group to another member: it becomes the owner and the old owner
// an admin, who may then leave like anyone else. Only the owner may; operators hand over
// whoever owns the group.
func (s *Service) TransferOwnership(ctx context.Context, tenant string, actor, groupID, to int64) error {
	if to <= 0 {
		return apperr.New(apperr.InvalidArgument, "user_id must be positive")
	}
	c, err := s.groupConversation(ctx, tenant, groupID)
	if err != nil {
		return err
	}
	from := actor
	if actor == Operator {
		g, err := s.d.Groups.Group(ctx, tenant, groupID)
		if errors.Is(err, social.ErrNotFound) {
			return apperr.New(apperr.NotFound, "group not found")
		}
		if err != nil {
			return busy("read group", err)
		}
		from = g.Owner
	} else {
		a, err := s.actorMember(ctx, tenant, actor, groupID)
		if err != nil {
			return err
		}
		if a.Role != social.RoleOwner {
			return apperr.New(apperr.Forbidden, "only the owner hands the group over")
		}
	}
	if to == from {
		return apperr.New(apperr.InvalidArgument, "the user already owns the group")
	}
	if _, err := s.member(ctx, tenant, groupID, to); err != nil {
		return err
	}
	err = s.d.Groups.TransferOwnership(ctx, tenant, groupID, from, to)
	if errors.Is(err, social.ErrNotFound) {
		return apperr.New(apperr.NotFound, "not a member of this group") // removed meanwhile
	}
	if err != nil {
		return busy("transfer ownership", err)
	}
	s.d.Resolver.InvalidateGroup(tenant, c.Topic)
	s.post(ctx, tenant, []notice{
		memberNotice(to, c, memberEvent{Action: "role", By: actor, Role: string(social.RoleOwner)}),
		memberNotice(from, c, memberEvent{Action: "role", By: actor, Role: string(social.RoleAdmin)}),
	})
	return nil
}

// SetRole makes a member an admin or a plain member again; only the owner may.
func (s *Service) SetRole(ctx context.Context, tenant string, actor, groupID, user int64, role social.Role) error {
	if role != social.RoleAdmin && role != social.RoleMember {
		return apperr.New(apperr.InvalidArgument, "role must be admin or member")
	}
	c, err := s.groupConversation(ctx, tenant, groupID)
	if err != nil {
		return err
	}
	if actor != Operator {
		a, err := s.actorMember(ctx, tenant, actor, groupID)
		if err != nil {
			return err
		}
		if a.Role != social.RoleOwner {
			return apperr.New(apperr.Forbidden, "only the owner changes roles")
		}
	}
	target, err := s.member(ctx, tenant, groupID, user)
	if err != nil {
		return err
	}
	if target.Role == social.RoleOwner {
		return apperr.New(apperr.Forbidden, "the owner's role cannot change")
	}
	if err := s.d.Groups.SetRole(ctx, tenant, groupID, user, role); err != nil {
		return busy("set role", err)
	}
	s.d.Resolver.InvalidateGroup(tenant, c.Topic)
	s.post(ctx, tenant, []notice{memberNotice(user, c, memberEvent{Action: "role", By: actor, Role: string(role)})})
	return nil
}

// SetMuteAll mutes or unmutes everyone but the owner and admins; owner or admins only.
func (s *Service) SetMuteAll(ctx context.Context, tenant string, actor, groupID int64, on bool) error {
	c, err := s.groupConversation(ctx, tenant, groupID)
	if err != nil {
		return err
	}
	if err := s.requireManager(ctx, tenant, actor, groupID); err != nil {
		return err
	}
	g, err := s.d.Groups.Group(ctx, tenant, groupID)
	if err != nil {
		return busy("read group", err)
	}
	if g.MuteAll == on {
		return nil // nothing changes, nothing to announce
	}
	if err := s.d.Groups.SetMuteAll(ctx, tenant, groupID, on); err != nil {
		return busy("set mute all", err)
	}
	s.d.Resolver.InvalidateGroup(tenant, c.Topic)
	s.announce(ctx, tenant, actor, c, groupEvent{Event: eventMuteAll, MuteAll: on, By: actor})
	return nil
}

// MuteMember mutes user for d from now (0 unmutes), by someone who outranks them. A running
// mute also silences an admin during mute-all.
func (s *Service) MuteMember(ctx context.Context, tenant string, actor, groupID, user int64, d time.Duration) error {
	if d < 0 || d > MaxMute {
		return apperr.New(apperr.InvalidArgument, "a mute lasts 0 (unmute) to 366 days")
	}
	var until time.Time
	if d > 0 {
		until = s.d.Clock.Now().Add(d)
	}
	c, err := s.groupConversation(ctx, tenant, groupID)
	if err != nil {
		return err
	}
	target, err := s.member(ctx, tenant, groupID, user)
	if err != nil {
		return err
	}
	if target.Role == social.RoleOwner {
		return apperr.New(apperr.Forbidden, "the owner cannot be muted")
	}
	if err := s.requireOutrank(ctx, tenant, actor, groupID, target); err != nil {
		return err
	}
	if err := s.d.Groups.MuteMember(ctx, tenant, groupID, user, until); err != nil {
		return busy("mute member", err)
	}
	s.d.Resolver.InvalidateGroup(tenant, c.Topic)
	ev := memberEvent{Action: "muted", By: actor}
	if !until.IsZero() {
		ev.MutedUntil = until.UnixMilli()
	}
	s.post(ctx, tenant, []notice{memberNotice(user, c, ev)})
	return nil
}

// UserGroups pages the group conversations of a user by conversation id.
func (s *Service) UserGroups(ctx context.Context, tenant string, user, after int64, limit int) ([]social.Conversation, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	cs, err := s.d.Groups.UserConversations(ctx, tenant, user, social.KindGroup, after, limit)
	return cs, busy("list groups", err)
}

// UserConversations pages all conversations of a user by conversation id (the conversation
// list when no Redis dialog list is wired, seed 003 §11 cold path).
func (s *Service) UserConversations(ctx context.Context, tenant string, user, after int64, limit int) ([]social.Conversation, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	cs, err := s.d.Groups.UserConversations(ctx, tenant, user, 0, after, limit)
	return cs, busy("list conversations", err)
}

func (s *Service) groupConversation(ctx context.Context, tenant string, groupID int64) (social.Conversation, error) {
	if groupID <= 0 {
		return social.Conversation{}, apperr.New(apperr.InvalidArgument, "group_id must be positive")
	}
	c, err := s.d.Directory.Conversation(ctx, tenant, topic.ForGroup(groupID))
	if errors.Is(err, social.ErrNotFound) {
		return social.Conversation{}, apperr.New(apperr.NotFound, "group not found")
	}
	return c, busy("look up group", err)
}

// member reads a member; a non-member is 40401.
func (s *Service) member(ctx context.Context, tenant string, groupID, user int64) (social.Member, error) {
	m, err := s.d.Groups.GroupMember(ctx, tenant, groupID, user)
	if errors.Is(err, social.ErrNotFound) {
		return social.Member{}, apperr.New(apperr.NotFound, "not a member of this group")
	}
	return m, busy("read member", err)
}

// actorMember reads the acting user's membership; a non-member is 40301. Operators pass as a
// member without a row.
func (s *Service) actorMember(ctx context.Context, tenant string, actor, groupID int64) (social.Member, error) {
	if actor == Operator {
		return social.Member{Role: social.RoleOwner}, nil
	}
	m, err := s.d.Groups.GroupMember(ctx, tenant, groupID, actor)
	if errors.Is(err, social.ErrNotFound) {
		return social.Member{}, apperr.New(apperr.Forbidden, "not a member of this group")
	}
	return m, busy("read member", err)
}

func (s *Service) requireManager(ctx context.Context, tenant string, actor, groupID int64) error {
	a, err := s.actorMember(ctx, tenant, actor, groupID)
	if err != nil {
		return err
	}
	if !a.Role.Manages() {
		return apperr.New(apperr.Forbidden, "only the owner or an admin may do this")
	}
	return nil
}

func (s *Service) requireOutrank(ctx context.Context, tenant string, actor, groupID int64, target social.Member) error {
	if actor == Operator {
		return nil
	}
	a, err := s.actorMember(ctx, tenant, actor, groupID)
	if err != nil {
		return err
	}
	if !a.Role.Outranks(target.Role) {
		return apperr.New(apperr.Forbidden, "not allowed for your role")
	}
	return nil
}

func memberNotice(user int64, c social.Conversation, ev memberEvent) notice {
	ev.Topic, ev.GroupID = c.Topic, c.GroupID
	return notice{user: user, kind: mailbox.Member, conversationID: c.ID, payload: ev}
}
