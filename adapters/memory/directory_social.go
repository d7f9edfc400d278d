package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/domain/webhook"
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
	d.mu.Lock()
	defer d.mu.Unlock()
	var friends []int64
	for pair := range d.graph(tenant).friends {
		switch user {
		case pair[0]:
			friends = append(friends, pair[1])
		case pair[1]:
			friends = append(friends, pair[0])
		}
	}
	return firstAbove(friends, func(u int64) int64 { return u }, after, limit)
}

// checkLimit refuses a page limit below 1 as the MySQL adapter does.
func checkLimit(limit int) error {
	if limit <= 0 {
		return apperr.New(apperr.InvalidArgument, "limit must be positive")
	}
	return nil
}

// firstAbove is the page of the items whose id is above after, by id, at most limit long.
func firstAbove[T any](items []T, id func(T) int64, after int64, limit int) ([]T, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	items = slices.DeleteFunc(items, func(v T) bool { return id(v) <= after })
	slices.SortFunc(items, func(a, b T) int { return cmp.Compare(id(a), id(b)) })
	return items[:min(len(items), limit)], nil
}

// RemoveFriendship ends a friendship.
func (d *Directory) RemoveFriendship(_ context.Context, tenant string, a, b, by int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	friends, key := d.graph(tenant).friends, [2]int64{min(a, b), max(a, b)}
	if !friends[key] {
		return nil
	}
	delete(friends, key)
	d.events.record(tenant, webhook.FriendshipRecord(a, b, false, by, millisNow()))
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
	if err := checkLimit(limit); err != nil {
		return nil, err
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
	d.befriend(tenant, sg, from, to, to)
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

// inGroup runs f under d.mu on the tenant's graph with the group and its conversation id.
func inGroup[T any](d *Directory, tenant string, groupID int64, f func(sg *socialGraph, g social.Group, conv int64) (T, error)) (T, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	var zero T
	g, ok := sg.groups[groupID]
	if !ok {
		return zero, fmt.Errorf("group %d: %w", groupID, social.ErrNotFound)
	}
	conv, ok := sg.topics[topic.ForGroup(groupID)]
	if !ok {
		return zero, fmt.Errorf("conversation of group %d: %w", groupID, social.ErrNotFound)
	}
	return f(sg, g, conv)
}

// changeGroup is inGroup for a change, which answers only an error.
func (d *Directory) changeGroup(tenant string, groupID int64, change func(sg *socialGraph, g social.Group, conv int64) error) error {
	_, err := inGroup(d, tenant, groupID, func(sg *socialGraph, g social.Group, conv int64) (struct{}, error) {
		return struct{}{}, change(sg, g, conv)
	})
	return err
}

// isMember fails unless user is a member of the group's conversation; the caller holds d.mu.
func (sg *socialGraph) isMember(groupID, conv, user int64) error {
	if !sg.members[conv][user] {
		return fmt.Errorf("member %d of group %d: %w", user, groupID, social.ErrNotFound)
	}
	return nil
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
	return inGroup(d, tenant, groupID, func(sg *socialGraph, g social.Group, conv int64) (social.GroupPolicy, error) {
		p := social.GroupPolicy{MuteAll: sg.extras.muteAll[groupID]}
		for u := range sg.members[conv] {
			m := sg.member(g, conv, u)
			if m.Role != social.RoleMember || m.MutedAt(now) {
				p.Special = append(p.Special, m)
			}
		}
		slices.SortFunc(p.Special, func(a, b social.Member) int { return cmp.Compare(a.UserID, b.UserID) })
		return p, nil
	})
}

// Group reads a group.
func (d *Directory) Group(_ context.Context, tenant string, groupID int64) (social.GroupInfo, error) {
	return inGroup(d, tenant, groupID, func(sg *socialGraph, g social.Group, conv int64) (social.GroupInfo, error) {
		return social.GroupInfo{Group: g, ConversationID: conv, MuteAll: sg.extras.muteAll[groupID], CreatedAt: sg.convs[conv].CreatedAt}, nil
	})
}

// GroupMembers pages a group's members by user id.
func (d *Directory) GroupMembers(_ context.Context, tenant string, groupID, after int64, limit int) ([]social.Member, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	return inGroup(d, tenant, groupID, func(sg *socialGraph, g social.Group, conv int64) ([]social.Member, error) {
		users, err := firstAbove(slices.Collect(maps.Keys(sg.members[conv])), func(u int64) int64 { return u }, after, limit)
		if err != nil {
			return nil, err
		}
		out := make([]social.Member, len(users))
		for i, u := range users {
			out[i] = sg.member(g, conv, u)
		}
		return out, nil
	})
}

// GroupMember reads one member.
func (d *Directory) GroupMember(_ context.Context, tenant string, groupID, user int64) (social.Member, error) {
	return inGroup(d, tenant, groupID, func(sg *socialGraph, g social.Group, conv int64) (social.Member, error) {
		if err := sg.isMember(groupID, conv, user); err != nil {
			return social.Member{}, err
		}
		return sg.member(g, conv, user), nil
	})
}

// RemoveMembers removes users and what they carried (role, mute).
func (d *Directory) RemoveMembers(_ context.Context, tenant string, groupID int64, users []int64, by int64) error {
	return d.changeGroup(tenant, groupID, func(sg *socialGraph, _ social.Group, conv int64) error {
		var removed []int64
		for _, u := range users {
			if sg.members[conv][u] {
				removed = append(removed, u)
			}
			delete(sg.members[conv], u)
			delete(sg.extras.roles[conv], u)
			delete(sg.extras.mutes[conv], u)
		}
		d.recordMembers(tenant, false, groupID, removed, by)
		return nil
	})
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
	return d.changeGroup(tenant, groupID, func(sg *socialGraph, _ social.Group, conv int64) error {
		if err := sg.isMember(groupID, conv, user); err != nil {
			return err
		}
		change(sg, conv)
		return nil
	})
}

func setNested[V any](m map[int64]map[int64]V, outer, inner int64, v V) {
	if m[outer] == nil {
		m[outer] = make(map[int64]V)
	}
	m[outer][inner] = v
}

// SetMuteAll flips the group's mute-all switch.
func (d *Directory) SetMuteAll(_ context.Context, tenant string, groupID int64, on bool) error {
	return d.changeGroup(tenant, groupID, func(sg *socialGraph, _ social.Group, _ int64) error {
		sg.extras.muteAll[groupID] = on
		return nil
	})
}

// UserConversations pages a user's conversations by id.
func (d *Directory) UserConversations(_ context.Context, tenant string, user int64, kind social.ConversationKind, after int64, limit int) ([]social.Conversation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	var convs []social.Conversation
	for id, members := range sg.members {
		if c := sg.convs[id]; members[user] && (kind == 0 || c.Kind == kind) {
			convs = append(convs, c)
		}
	}
	return firstAbove(convs, func(c social.Conversation) int64 { return c.ID }, after, limit)
}

// TransferOwnership swaps the roles of the owner and the new owner and records the new owner.
func (d *Directory) TransferOwnership(_ context.Context, tenant string, groupID, from, to int64) error {
	return d.changeGroup(tenant, groupID, func(sg *socialGraph, g social.Group, conv int64) error {
		if g.Owner != from {
			return fmt.Errorf("transfer group %d from %d: %w", groupID, from, social.ErrNotOwner)
		}
		if err := sg.isMember(groupID, conv, to); err != nil {
			return err
		}
		g.Owner = to
		sg.groups[groupID] = g
		setNested(sg.extras.roles, conv, to, social.RoleOwner)
		setNested(sg.extras.roles, conv, from, social.RoleAdmin)
		return nil
	})
}
