package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// The social graph beyond ports.Directory, over the same tables (t_users, t_friendships,
// t_friend_requests, t_blocks, t_groups, t_conversation_members).
var (
	_ ports.Profiles  = (*Directory)(nil)
	_ ports.Friends   = (*Directory)(nil)
	_ ports.Blocks    = (*Directory)(nil)
	_ ports.SendRules = (*Directory)(nil)
	_ ports.Groups    = (*Directory)(nil)
)

// Profile reads a user's profile.
func (d *Directory) Profile(ctx context.Context, tenant string, user int64) (social.Profile, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return social.Profile{}, err
	}
	row, err := t.q.UserProfile(ctx, user)
	if errors.Is(err, sql.ErrNoRows) {
		return social.Profile{}, fmt.Errorf("profile of %d: %w", user, social.ErrNotFound)
	}
	if err != nil {
		return social.Profile{}, fmt.Errorf("profile of %d: %w", user, err)
	}
	return social.Profile{UserID: row.UserID, Nickname: row.Nickname, Avatar: row.Avatar, CreatedAt: row.CreatedAt.UTC()}, nil
}

// UpdateProfile changes nickname and avatar of an existing user.
func (d *Directory) UpdateProfile(ctx context.Context, tenant string, p social.Profile) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	n, err := t.q.UpdateUserProfile(ctx, sqlcdb.UpdateUserProfileParams{
		Nickname: p.Nickname, Avatar: p.Avatar, UpdatedAt: d.now(), UserID: p.UserID,
	})
	if err != nil {
		return fmt.Errorf("update profile of %d: %w", p.UserID, err)
	}
	if n == 0 {
		// MySQL counts changed rows only: an unchanged profile also reports 0.
		return d.requireUser(ctx, t, p.UserID)
	}
	return nil
}

func (d *Directory) requireUser(ctx context.Context, t *tenantDB, user int64) error {
	ok, err := t.q.UserExists(ctx, user)
	if err != nil {
		return fmt.Errorf("user %d exists: %w", user, err)
	}
	if !ok {
		return fmt.Errorf("user %d: %w", user, social.ErrNotFound)
	}
	return nil
}

// Friends merges both sides of the friendship pairs, each read through its own index.
func (d *Directory) Friends(ctx context.Context, tenant string, user, after int64, limit int) ([]int64, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	lim, err := limit32(limit)
	if err != nil {
		return nil, err
	}
	above, err := t.q.FriendsAbove(ctx, sqlcdb.FriendsAboveParams{UserSmall: user, UserBig: after, Limit: lim})
	if err != nil {
		return nil, fmt.Errorf("friends of %d: %w", user, err)
	}
	below, err := t.q.FriendsBelow(ctx, sqlcdb.FriendsBelowParams{UserBig: user, UserSmall: after, Limit: lim})
	if err != nil {
		return nil, fmt.Errorf("friends of %d: %w", user, err)
	}
	out := append(above, below...)
	slices.Sort(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func limit32(limit int) (int32, error) {
	if limit <= 0 || limit > 10_000 {
		return 0, apperr.New(apperr.InvalidArgument, "limit must be 1-10000")
	}
	return int32(limit), nil
}

// RemoveFriendship deletes the pair row; a missing pair is no error.
func (d *Directory) RemoveFriendship(ctx context.Context, tenant string, a, b, by int64) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	err = inTx(ctx, t.db, func(q *sqlcdb.Queries) error {
		n, err := q.RemoveFriendship(ctx, sqlcdb.RemoveFriendshipParams{UserSmall: min(a, b), UserBig: max(a, b)})
		if err != nil || n == 0 {
			return err
		}
		return recordEvent(ctx, q, webhook.FriendshipRecord(a, b, false, by, d.now()))
	})
	if err != nil {
		return fmt.Errorf("remove friendship %d-%d: %w", a, b, err)
	}
	return nil
}

// RequestFriend upserts the pending request.
func (d *Directory) RequestFriend(ctx context.Context, tenant string, r social.FriendRequest) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	err = t.q.UpsertFriendRequest(ctx, sqlcdb.UpsertFriendRequestParams{
		FromUser: r.From, ToUser: r.To, Message: r.Message, CreatedAt: r.CreatedAt.UTC(),
	})
	if err != nil {
		return fmt.Errorf("friend request %d→%d: %w", r.From, r.To, err)
	}
	return nil
}

// FriendRequests lists pending requests to or from the user, newest first.
func (d *Directory) FriendRequests(ctx context.Context, tenant string, user int64, incoming bool, limit int) ([]social.FriendRequest, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	lim, err := limit32(limit)
	if err != nil {
		return nil, err
	}
	var rows []sqlcdb.TFriendRequest
	if incoming {
		rows, err = t.q.IncomingFriendRequests(ctx, sqlcdb.IncomingFriendRequestsParams{ToUser: user, Limit: lim})
	} else {
		rows, err = t.q.OutgoingFriendRequests(ctx, sqlcdb.OutgoingFriendRequestsParams{FromUser: user, Limit: lim})
	}
	if err != nil {
		return nil, fmt.Errorf("friend requests of %d: %w", user, err)
	}
	out := make([]social.FriendRequest, len(rows))
	for i, r := range rows {
		out[i] = social.FriendRequest{From: r.FromUser, To: r.ToUser, Message: r.Message, CreatedAt: r.CreatedAt.UTC()}
	}
	return out, nil
}

// AcceptFriendRequest deletes the request and writes the friendship in one transaction, so two
// accepts racing make one friendship and the loser sees no request.
func (d *Directory) AcceptFriendRequest(ctx context.Context, tenant string, from, to int64) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	err = inTx(ctx, t.db, func(q *sqlcdb.Queries) error {
		n, err := q.DeleteFriendRequest(ctx, sqlcdb.DeleteFriendRequestParams{FromUser: from, ToUser: to})
		if err != nil {
			return err
		}
		if n == 0 {
			return social.ErrNotFound
		}
		return befriend(ctx, q, min(from, to), max(from, to), to, d.now())
	})
	if err != nil {
		return fmt.Errorf("accept friend request %d→%d: %w", from, to, err)
	}
	return nil
}

// DeleteFriendRequest removes a pending request.
func (d *Directory) DeleteFriendRequest(ctx context.Context, tenant string, from, to int64) (bool, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return false, err
	}
	n, err := t.q.DeleteFriendRequest(ctx, sqlcdb.DeleteFriendRequestParams{FromUser: from, ToUser: to})
	if err != nil {
		return false, fmt.Errorf("delete friend request %d→%d: %w", from, to, err)
	}
	return n > 0, nil
}

// Block records that user refuses P2P messages from blocked.
func (d *Directory) Block(ctx context.Context, tenant string, user, blocked int64) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.AddBlock(ctx, sqlcdb.AddBlockParams{UserID: user, BlockedUserID: blocked, CreatedAt: d.now()}); err != nil {
		return fmt.Errorf("block %d→%d: %w", user, blocked, err)
	}
	return nil
}

// Unblock removes a block; a missing one is no error.
func (d *Directory) Unblock(ctx context.Context, tenant string, user, blocked int64) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.RemoveBlock(ctx, sqlcdb.RemoveBlockParams{UserID: user, BlockedUserID: blocked}); err != nil {
		return fmt.Errorf("unblock %d→%d: %w", user, blocked, err)
	}
	return nil
}

// Blocked lists whom user blocked.
func (d *Directory) Blocked(ctx context.Context, tenant string, user int64) ([]int64, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	out, err := t.q.BlockedBy(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("blocks of %d: %w", user, err)
	}
	return out, nil
}

// Relation answers the P2P send check with one statement.
func (d *Directory) Relation(ctx context.Context, tenant string, a, b int64) (social.Relation, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return social.Relation{}, err
	}
	row, err := t.q.PairRelation(ctx, sqlcdb.PairRelationParams{UserSmall: min(a, b), UserBig: max(a, b)})
	if err != nil {
		return social.Relation{}, fmt.Errorf("relation %d-%d: %w", a, b, err)
	}
	return social.Relation{Friends: row.Friends, Blocked: row.Blocked}, nil
}

// group reads a group row; social.ErrNotFound when absent.
func (d *Directory) group(ctx context.Context, t *tenantDB, groupID int64) (sqlcdb.GroupRowRow, error) {
	row, err := t.q.GroupRow(ctx, groupID)
	if errors.Is(err, sql.ErrNoRows) {
		return row, fmt.Errorf("group %d: %w", groupID, social.ErrNotFound)
	}
	if err != nil {
		return row, fmt.Errorf("group %d: %w", groupID, err)
	}
	return row, nil
}

// GroupPolicy reads the mute-all switch and the special members.
func (d *Directory) GroupPolicy(ctx context.Context, tenant string, groupID int64, now time.Time) (social.GroupPolicy, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return social.GroupPolicy{}, err
	}
	g, err := d.group(ctx, t, groupID)
	if err != nil {
		return social.GroupPolicy{}, err
	}
	managing, err := t.q.ManagingMembers(ctx, g.ConversationID)
	if err != nil {
		return social.GroupPolicy{}, fmt.Errorf("policy of group %d: %w", groupID, err)
	}
	muted, err := t.q.MutedMembers(ctx, sqlcdb.MutedMembersParams{
		ConversationID: g.ConversationID, Now: sql.NullTime{Time: now.UTC(), Valid: true},
	})
	if err != nil {
		return social.GroupPolicy{}, fmt.Errorf("policy of group %d: %w", groupID, err)
	}
	p := social.GroupPolicy{MuteAll: g.MuteAll, Special: make([]social.Member, 0, len(managing)+len(muted))}
	seen := make(map[int64]bool, len(managing))
	for _, r := range managing {
		seen[r.UserID] = true
		p.Special = append(p.Special, memberOf(r.UserID, r.Role, r.MutedUntil, r.JoinedAt))
	}
	for _, r := range muted {
		if !seen[r.UserID] { // a muted admin is listed once
			p.Special = append(p.Special, memberOf(r.UserID, r.Role, r.MutedUntil, r.JoinedAt))
		}
	}
	return p, nil
}

func memberOf(user int64, role string, mutedUntil sql.NullTime, joined time.Time) social.Member {
	return social.Member{UserID: user, Role: social.Role(role), JoinedAt: joined.UTC(), MutedUntil: nullTimeUTC(mutedUntil)}
}

// Group reads a group.
func (d *Directory) Group(ctx context.Context, tenant string, groupID int64) (social.GroupInfo, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return social.GroupInfo{}, err
	}
	g, err := d.group(ctx, t, groupID)
	if err != nil {
		return social.GroupInfo{}, err
	}
	return social.GroupInfo{
		Group:          social.Group{ID: g.GroupID, Owner: g.OwnerID, Name: g.Name},
		ConversationID: g.ConversationID, MuteAll: g.MuteAll, CreatedAt: g.CreatedAt.UTC(),
	}, nil
}

// GroupMembers pages a group's members by user id.
func (d *Directory) GroupMembers(ctx context.Context, tenant string, groupID, after int64, limit int) ([]social.Member, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	lim, err := limit32(limit)
	if err != nil {
		return nil, err
	}
	g, err := d.group(ctx, t, groupID)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.GroupMembersPage(ctx, sqlcdb.GroupMembersPageParams{ConversationID: g.ConversationID, After: after, Limit: lim})
	if err != nil {
		return nil, fmt.Errorf("members of group %d: %w", groupID, err)
	}
	out := make([]social.Member, len(rows))
	for i, r := range rows {
		out[i] = memberOf(r.UserID, r.Role, r.MutedUntil, r.JoinedAt)
	}
	return out, nil
}

// GroupMember reads one member.
func (d *Directory) GroupMember(ctx context.Context, tenant string, groupID, user int64) (social.Member, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return social.Member{}, err
	}
	g, err := d.group(ctx, t, groupID)
	if err != nil {
		return social.Member{}, err
	}
	r, err := t.q.GroupMemberRow(ctx, sqlcdb.GroupMemberRowParams{ConversationID: g.ConversationID, UserID: user})
	if errors.Is(err, sql.ErrNoRows) {
		return social.Member{}, fmt.Errorf("member %d of group %d: %w", user, groupID, social.ErrNotFound)
	}
	if err != nil {
		return social.Member{}, fmt.Errorf("member %d of group %d: %w", user, groupID, err)
	}
	return memberOf(r.UserID, r.Role, r.MutedUntil, r.JoinedAt), nil
}

// RemoveMembers deletes member rows, their read state with them.
func (d *Directory) RemoveMembers(ctx context.Context, tenant string, groupID int64, users []int64, by int64) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	g, err := d.group(ctx, t, groupID)
	if err != nil {
		return err
	}
	err = inTx(ctx, t.db, func(q *sqlcdb.Queries) error {
		var removed []int64
		for _, u := range users {
			n, err := q.RemoveMember(ctx, sqlcdb.RemoveMemberParams{ConversationID: g.ConversationID, UserID: u})
			if err != nil {
				return err
			}
			if n > 0 {
				removed = append(removed, u)
			}
		}
		return recordMembers(ctx, q, false, groupID, removed, by, d.now())
	})
	if err != nil {
		return fmt.Errorf("remove members of group %d: %w", groupID, err)
	}
	return nil
}

// SetRole changes a member's role.
func (d *Directory) SetRole(ctx context.Context, tenant string, groupID, user int64, role social.Role) error {
	if !role.Valid() {
		return apperr.New(apperr.InvalidArgument, "unknown role")
	}
	return d.updateMember(ctx, tenant, groupID, user, func(q *sqlcdb.Queries, conv int64) (int64, error) {
		return q.SetMemberRole(ctx, sqlcdb.SetMemberRoleParams{Role: string(role), ConversationID: conv, UserID: user})
	})
}

// MuteMember sets or clears a member's mute.
func (d *Directory) MuteMember(ctx context.Context, tenant string, groupID, user int64, until time.Time) error {
	v := sql.NullTime{Time: until.UTC().Truncate(time.Millisecond), Valid: !until.IsZero()}
	return d.updateMember(ctx, tenant, groupID, user, func(q *sqlcdb.Queries, conv int64) (int64, error) {
		return q.SetMemberMutedUntil(ctx, sqlcdb.SetMemberMutedUntilParams{MutedUntil: v, ConversationID: conv, UserID: user})
	})
}

// updateMember runs one member UPDATE; no changed row means not a member or nothing to change,
// told apart by reading the row.
func (d *Directory) updateMember(ctx context.Context, tenant string, groupID, user int64, update func(*sqlcdb.Queries, int64) (int64, error)) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	g, err := d.group(ctx, t, groupID)
	if err != nil {
		return err
	}
	n, err := update(t.q, g.ConversationID)
	if err != nil {
		return fmt.Errorf("update member %d of group %d: %w", user, groupID, err)
	}
	if n > 0 {
		return nil
	}
	_, err = d.GroupMember(ctx, tenant, groupID, user)
	return err
}

// SetMuteAll flips the group's mute-all switch.
func (d *Directory) SetMuteAll(ctx context.Context, tenant string, groupID int64, on bool) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	n, err := t.q.SetGroupMuteAll(ctx, sqlcdb.SetGroupMuteAllParams{MuteAll: on, UpdatedAt: d.now(), GroupID: groupID})
	if err != nil {
		return fmt.Errorf("mute all of group %d: %w", groupID, err)
	}
	if n == 0 {
		_, err := d.group(ctx, t, groupID)
		return err
	}
	return nil
}

// UserConversations pages a user's conversations by id.
func (d *Directory) UserConversations(ctx context.Context, tenant string, user int64, kind social.ConversationKind, after int64, limit int) ([]social.Conversation, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	lim, err := limit32(limit)
	if err != nil {
		return nil, err
	}
	var rows []sqlcdb.TConversation
	if kind == 0 {
		rows, err = t.q.UserConversationsPage(ctx, sqlcdb.UserConversationsPageParams{UserID: user, After: after, Limit: lim})
	} else {
		rows, err = t.q.UserConversationsOfKindPage(ctx, sqlcdb.UserConversationsOfKindPageParams{
			UserID: user, After: after, Kind: int8(kind), Limit: lim,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("conversations of %d: %w", user, err)
	}
	out := make([]social.Conversation, len(rows))
	for i, r := range rows {
		out[i], _ = conversationOf(r, nil, "")
	}
	return out, nil
}

// TransferOwnership locks the group row, checks the owner, then swaps the two roles and the
// owner column in the same transaction, so a group never has two owners or none.
func (d *Directory) TransferOwnership(ctx context.Context, tenant string, groupID, from, to int64) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	err = inTx(ctx, t.db, func(q *sqlcdb.Queries) error {
		g, err := q.LockGroupOwner(ctx, groupID)
		if errors.Is(err, sql.ErrNoRows) {
			return social.ErrNotFound
		}
		if err != nil {
			return err
		}
		if g.OwnerID != from {
			return social.ErrNotOwner
		}
		n, err := q.SetMemberRole(ctx, sqlcdb.SetMemberRoleParams{Role: string(social.RoleOwner), ConversationID: g.ConversationID, UserID: to})
		if err != nil {
			return err
		}
		if n == 0 { // the owner's role never equals the new one, so no row means no member
			return social.ErrNotFound
		}
		if _, err := q.SetMemberRole(ctx, sqlcdb.SetMemberRoleParams{Role: string(social.RoleAdmin), ConversationID: g.ConversationID, UserID: from}); err != nil {
			return err
		}
		return q.SetGroupOwner(ctx, sqlcdb.SetGroupOwnerParams{OwnerID: to, UpdatedAt: d.now(), GroupID: groupID})
	})
	if err != nil {
		return fmt.Errorf("transfer group %d from %d to %d: %w", groupID, from, to, err)
	}
	return nil
}
