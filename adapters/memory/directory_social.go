package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/ports"
)

var (
	_ ports.Profiles  = (*Directory)(nil)
	_ ports.Friends   = (*Directory)(nil)
	_ ports.Blocks    = (*Directory)(nil)
	_ ports.SendRules = (*Directory)(nil)
	_ ports.Groups    = (*Directory)(nil)
)

// socialExtras is the part of a tenant's graph beyond ports.Directory.
type socialExtras struct {
	avatars  map[int64]string
	requests map[[2]int64]social.FriendRequest // from, to
	blocks   map[[2]int64]bool                 // user, blocked
	roles    map[int64]map[int64]social.Role   // conversation id → user → role other than member
	mutes    map[int64]map[int64]time.Time     // conversation id → user → muted until
	muteAll  map[int64]bool                    // group id
}

func newSocialExtras() socialExtras {
	return socialExtras{
		avatars: make(map[int64]string), requests: make(map[[2]int64]social.FriendRequest),
		blocks: make(map[[2]int64]bool), roles: make(map[int64]map[int64]social.Role),
		mutes: make(map[int64]map[int64]time.Time), muteAll: make(map[int64]bool),
	}
}

// Profile reads a user's profile.
func (d *Directory) Profile(_ context.Context, tenant string, user int64) (social.Profile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	u, ok := sg.users[user]
	if !ok {
		return social.Profile{}, fmt.Errorf("profile of %d: %w", user, social.ErrNotFound)
	}
	return social.Profile{UserID: u.ID, Nickname: u.Nickname, Avatar: sg.extras.avatars[user]}, nil
}

// UpdateProfile changes nickname and avatar of an existing user.
func (d *Directory) UpdateProfile(_ context.Context, tenant string, p social.Profile) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	u, ok := sg.users[p.UserID]
	if !ok {
		return fmt.Errorf("user %d: %w", p.UserID, social.ErrNotFound)
	}
	u.Nickname = p.Nickname
	sg.users[p.UserID] = u
	sg.extras.avatars[p.UserID] = p.Avatar
	return nil
}

// Friends lists a user's friends above after.
func (d *Directory) Friends(_ context.Context, tenant string, user, after int64, limit int) ([]int64, error) {
	if limit <= 0 {
		return nil, apperr.New(apperr.InvalidArgument, "limit must be positive")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int64
	for pair := range d.graph(tenant).friends {
		switch {
		case pair[0] == user && pair[1] > after:
			out = append(out, pair[1])
		case pair[1] == user && pair[0] > after:
			out = append(out, pair[0])
		}
	}
	slices.Sort(out)
	return out[:min(len(out), limit)], nil
}

// RemoveFriendship ends a friendship.
func (d *Directory) RemoveFriendship(_ context.Context, tenant string, a, b int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.graph(tenant).friends, [2]int64{min(a, b), max(a, b)})
	return nil
}

// RequestFriend records a pending request.
func (d *Directory) RequestFriend(_ context.Context, tenant string, r social.FriendRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	r.CreatedAt = r.CreatedAt.UTC().Truncate(time.Millisecond)
	d.graph(tenant).extras.requests[[2]int64{r.From, r.To}] = r
	return nil
}

// FriendRequests lists pending requests to or from the user, newest first.
func (d *Directory) FriendRequests(_ context.Context, tenant string, user int64, incoming bool, limit int) ([]social.FriendRequest, error) {
	if limit <= 0 {
		return nil, apperr.New(apperr.InvalidArgument, "limit must be positive")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []social.FriendRequest
	for _, r := range d.graph(tenant).extras.requests {
		if (incoming && r.To == user) || (!incoming && r.From == user) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b social.FriendRequest) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.From+a.To, b.From+b.To) // the other side, ascending
	})
	return out[:min(len(out), limit)], nil
}

// AcceptFriendRequest turns a pending request into a friendship.
func (d *Directory) AcceptFriendRequest(_ context.Context, tenant string, from, to int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	key := [2]int64{from, to}
	if _, ok := sg.extras.requests[key]; !ok {
		return fmt.Errorf("friend request %d→%d: %w", from, to, social.ErrNotFound)
	}
	delete(sg.extras.requests, key)
	sg.friends[[2]int64{min(from, to), max(from, to)}] = true
	return nil
}

// DeleteFriendRequest removes a pending request.
func (d *Directory) DeleteFriendRequest(_ context.Context, tenant string, from, to int64) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	key := [2]int64{from, to}
	_, ok := sg.extras.requests[key]
	delete(sg.extras.requests, key)
	return ok, nil
}

// Block records a block.
func (d *Directory) Block(_ context.Context, tenant string, user, blocked int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.graph(tenant).extras.blocks[[2]int64{user, blocked}] = true
	return nil
}

// Unblock removes a block.
func (d *Directory) Unblock(_ context.Context, tenant string, user, blocked int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.graph(tenant).extras.blocks, [2]int64{user, blocked})
	return nil
}

// Blocked lists whom user blocked.
func (d *Directory) Blocked(_ context.Context, tenant string, user int64) ([]int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int64
	for pair := range d.graph(tenant).extras.blocks {
		if pair[0] == user {
			out = append(out, pair[1])
		}
	}
	slices.Sort(out)
	return out, nil
}

// Relation answers the P2P send check.
func (d *Directory) Relation(_ context.Context, tenant string, a, b int64) (social.Relation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	return social.Relation{
		Friends: sg.friends[[2]int64{min(a, b), max(a, b)}],
		Blocked: sg.extras.blocks[[2]int64{a, b}] || sg.extras.blocks[[2]int64{b, a}],
	}, nil
}

// groupConversation returns a group and its conversation id; the caller holds d.mu.
func (sg *socialGraph) groupConversation(groupID int64) (social.Group, int64, error) {
	g, ok := sg.groups[groupID]
	if !ok {
		return social.Group{}, 0, fmt.Errorf("group %d: %w", groupID, social.ErrNotFound)
	}
	c, ok := sg.topics[topic.ForGroup(groupID)]
	if !ok {
		return social.Group{}, 0, fmt.Errorf("conversation of group %d: %w", groupID, social.ErrNotFound)
	}
	return g, c, nil
}

// member describes one member; the caller holds d.mu and has checked membership. The fake
// keeps no join time.
func (sg *socialGraph) member(g social.Group, conv, user int64) social.Member {
	m := social.Member{UserID: user, Role: social.RoleMember, MutedUntil: sg.extras.mutes[conv][user]}
	if r, ok := sg.extras.roles[conv][user]; ok {
		m.Role = r
	} else if g.Owner == user {
		m.Role = social.RoleOwner
	}
	return m
}

// GroupPolicy reads the mute-all switch and the special members.
func (d *Directory) GroupPolicy(_ context.Context, tenant string, groupID int64, now time.Time) (social.GroupPolicy, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	g, conv, err := sg.groupConversation(groupID)
	if err != nil {
		return social.GroupPolicy{}, err
	}
	p := social.GroupPolicy{MuteAll: sg.extras.muteAll[groupID]}
	for u := range sg.members[conv] {
		m := sg.member(g, conv, u)
		if m.Role != social.RoleMember || m.MutedAt(now) {
			p.Special = append(p.Special, m)
		}
	}
	slices.SortFunc(p.Special, func(a, b social.Member) int { return cmp.Compare(a.UserID, b.UserID) })
	return p, nil
}

// Group reads a group.
func (d *Directory) Group(_ context.Context, tenant string, groupID int64) (social.GroupInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	g, conv, err := sg.groupConversation(groupID)
	if err != nil {
		return social.GroupInfo{}, err
	}
	return social.GroupInfo{Group: g, ConversationID: conv, MuteAll: sg.extras.muteAll[groupID], CreatedAt: sg.convs[conv].CreatedAt}, nil
}

// GroupMembers pages a group's members by user id.
func (d *Directory) GroupMembers(_ context.Context, tenant string, groupID, after int64, limit int) ([]social.Member, error) {
	if limit <= 0 {
		return nil, apperr.New(apperr.InvalidArgument, "limit must be positive")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	g, conv, err := sg.groupConversation(groupID)
	if err != nil {
		return nil, err
	}
	var users []int64
	for u := range sg.members[conv] {
		if u > after {
			users = append(users, u)
		}
	}
	slices.Sort(users)
	users = users[:min(len(users), limit)]
	out := make([]social.Member, len(users))
	for i, u := range users {
		out[i] = sg.member(g, conv, u)
	}
	return out, nil
}

// GroupMember reads one member.
func (d *Directory) GroupMember(_ context.Context, tenant string, groupID, user int64) (social.Member, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	g, conv, err := sg.groupConversation(groupID)
	if err != nil {
		return social.Member{}, err
	}
	if !sg.members[conv][user] {
		return social.Member{}, fmt.Errorf("member %d of group %d: %w", user, groupID, social.ErrNotFound)
	}
	return sg.member(g, conv, user), nil
}

// RemoveMembers removes users and what they carried (role, mute).
func (d *Directory) RemoveMembers(_ context.Context, tenant string, groupID int64, users []int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	_, conv, err := sg.groupConversation(groupID)
	if err != nil {
		return err
	}
	for _, u := range users {
		delete(sg.members[conv], u)
		delete(sg.extras.roles[conv], u)
		delete(sg.extras.mutes[conv], u)
	}
	return nil
}

// SetRole changes a member's role.
func (d *Directory) SetRole(_ context.Context, tenant string, groupID, user int64, role social.Role) error {
	if !role.Valid() {
		return apperr.New(apperr.InvalidArgument, "unknown role")
	}
	return d.updateMember(tenant, groupID, user, func(sg *socialGraph, conv int64) {
		setNested(sg.extras.roles, conv, user, role)
	})
}

// MuteMember sets or clears a member's mute.
func (d *Directory) MuteMember(_ context.Context, tenant string, groupID, user int64, until time.Time) error {
	return d.updateMember(tenant, groupID, user, func(sg *socialGraph, conv int64) {
		if until.IsZero() {
			delete(sg.extras.mutes[conv], user)
			return
		}
		setNested(sg.extras.mutes, conv, user, until.UTC().Truncate(time.Millisecond))
	})
}

func (d *Directory) updateMember(tenant string, groupID, user int64, change func(*socialGraph, int64)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	_, conv, err := sg.groupConversation(groupID)
	if err != nil {
		return err
	}
	if !sg.members[conv][user] {
		return fmt.Errorf("member %d of group %d: %w", user, groupID, social.ErrNotFound)
	}
	change(sg, conv)
	return nil
}

func setNested[V any](m map[int64]map[int64]V, outer, inner int64, v V) {
	if m[outer] == nil {
		m[outer] = make(map[int64]V)
	}
	m[outer][inner] = v
}

// SetMuteAll flips the group's mute-all switch.
func (d *Directory) SetMuteAll(_ context.Context, tenant string, groupID int64, on bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	if _, _, err := sg.groupConversation(groupID); err != nil {
		return err
	}
	sg.extras.muteAll[groupID] = on
	return nil
}

// UserConversations pages a user's conversations by id.
func (d *Directory) UserConversations(_ context.Context, tenant string, user int64, kind social.ConversationKind, after int64, limit int) ([]social.Conversation, error) {
	if limit <= 0 {
		return nil, apperr.New(apperr.InvalidArgument, "limit must be positive")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	var out []social.Conversation
	for id, members := range sg.members {
		c := sg.convs[id]
		if id > after && members[user] && (kind == 0 || c.Kind == kind) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b social.Conversation) int { return cmp.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)], nil
}

// TransferOwnership swaps the roles of the owner and the new owner and records the new owner.
func (d *Directory) TransferOwnership(_ context.Context, tenant string, groupID, from, to int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	g, conv, err := sg.groupConversation(groupID)
	if err != nil {
		return err
	}
	if g.Owner != from {
		return fmt.Errorf("transfer group %d from %d: %w", groupID, from, social.ErrNotOwner)
	}
	if !sg.members[conv][to] {
		return fmt.Errorf("member %d of group %d: %w", to, groupID, social.ErrNotFound)
	}
	g.Owner = to
	sg.groups[groupID] = g
	setNested(sg.extras.roles, conv, to, social.RoleOwner)
	setNested(sg.extras.roles, conv, from, social.RoleAdmin)
	return nil
}
