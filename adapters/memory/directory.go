package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// Directory is the in-memory social graph.
type Directory struct {
	mu      sync.Mutex
	tenants map[string]*socialGraph
	events  *WebhookEvents // nil: no webhook events recorded
}

type socialGraph struct {
	users   map[int64]social.User
	status  map[int64]social.UserStatus // of the users; absent: active
	friends map[[2]int64]bool           // smaller id first
	groups  map[int64]social.Group
	convs   map[int64]social.Conversation
	topics  map[string]int64         // topic → conversation id
	pairs   map[[2]int64]int64       // P2P pair → conversation id
	members map[int64]map[int64]bool // conversation id → users
	extras  socialExtras             // directory_social.go
}

var _ ports.Directory = (*Directory)(nil)

// NewDirectory returns an empty directory; tenants appear on first use.
func NewDirectory() *Directory { return &Directory{tenants: make(map[string]*socialGraph)} }

// RecordEventsIn makes d record its member and friendship events in e, as the MySQL stores
// write them with their changes (ports.WebhookEvents), and returns d.
func (d *Directory) RecordEventsIn(e *WebhookEvents) *Directory {
	d.events = e
	return d
}

// graph returns the tenant's graph; the caller holds d.mu.
func (d *Directory) graph(tenant string) *socialGraph {
	return stateOf(d.tenants, tenant, func() *socialGraph {
		return &socialGraph{
			users: make(map[int64]social.User), status: make(map[int64]social.UserStatus), friends: make(map[[2]int64]bool),
			groups: make(map[int64]social.Group), convs: make(map[int64]social.Conversation),
			topics: make(map[string]int64), pairs: make(map[[2]int64]int64),
			members: make(map[int64]map[int64]bool), extras: newSocialExtras(),
		}
	})
}

// CreateUser registers a user; registering a known user again updates the nickname.
func (d *Directory) CreateUser(_ context.Context, tenant string, u social.User) error {
	if u.ID <= 0 {
		return apperr.New(apperr.InvalidArgument, "user id must be positive")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.graph(tenant).users[u.ID] = u
	return nil
}

func (d *Directory) UserExists(ctx context.Context, tenant string, userID int64) (bool, error) {
	st, err := d.UserStatus(ctx, tenant, userID)
	return st != social.UserUnknown && st != social.UserDeleted, err
}

func (d *Directory) UserStatus(_ context.Context, tenant string, userID int64) (social.UserStatus, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.graph(tenant).statusOf(userID), nil
}

// statusOf is a user's status; the caller holds d.mu.
func (g *socialGraph) statusOf(user int64) social.UserStatus {
	if _, ok := g.users[user]; !ok {
		return social.UserUnknown
	}
	if st, ok := g.status[user]; ok {
		return st
	}
	return social.UserActive
}

func (d *Directory) SetUserStatus(_ context.Context, tenant string, userID int64, status social.UserStatus) error {
	if !status.Settable() {
		return apperr.New(apperr.InvalidArgument, "unknown user status")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.graph(tenant)
	switch st := g.statusOf(userID); {
	case st == social.UserUnknown:
		return social.ErrNotFound
	case st == social.UserDeleted && status != social.UserDeleted:
		return social.ErrUserDeleted
	}
	g.status[userID] = status
	return nil
}

// AddFriendship records the pair once; adding it again is a no-op.
func (d *Directory) AddFriendship(_ context.Context, tenant string, a, b int64) error {
	if a <= 0 || b <= 0 || a == b {
		return apperr.New(apperr.InvalidArgument, "a friendship needs two distinct users")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.befriend(tenant, d.graph(tenant), a, b, 0) // only operators: the event has no actor
	return nil
}

// befriend records the pair and, when it is new, its friendship.changed event by user by (0:
// an operator); the caller holds d.mu.
func (d *Directory) befriend(tenant string, sg *socialGraph, a, b, by int64) {
	key := [2]int64{min(a, b), max(a, b)}
	if sg.friends[key] {
		return
	}
	sg.friends[key] = true
	d.events.record(tenant, webhook.FriendshipRecord(a, b, true, by, millisNow()))
}

func (d *Directory) AreFriends(_ context.Context, tenant string, a, b int64) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.graph(tenant).friends[[2]int64{min(a, b), max(a, b)}], nil
}

// CreateGroup creates the group, its conversation and its members (owner included), or nothing.
func (d *Directory) CreateGroup(_ context.Context, tenant string, g social.Group, conversationID int64, members []int64, by int64) (social.Conversation, error) {
	if g.ID <= 0 || g.Owner <= 0 || conversationID <= 0 {
		return social.Conversation{}, apperr.New(apperr.InvalidArgument, "group, owner and conversation ids must be positive")
	}
	if slices.ContainsFunc(members, func(u int64) bool { return u <= 0 }) {
		return social.Conversation{}, apperr.New(apperr.InvalidArgument, "member ids must be positive")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	conv := social.Conversation{ID: conversationID, Topic: topic.ForGroup(g.ID), Kind: social.KindGroup, GroupID: g.ID, CreatedAt: millisNow()}
	_, groupTaken := sg.groups[g.ID]
	_, convTaken := sg.convs[conversationID]
	_, topicTaken := sg.topics[conv.Topic]
	if groupTaken || convTaken || topicTaken {
		return social.Conversation{}, apperr.New(apperr.Conflict, "group or conversation already exists")
	}
	sg.groups[g.ID] = g
	sg.addConversation(conv)
	added := sg.addMembers(conversationID, append([]int64{g.Owner}, members...))
	d.recordMembers(tenant, true, g.ID, added, by)
	return conv, nil
}

// recordMembers records the member.joined or member.left event of users by user by (0: an
// operator), when there are any.
func (d *Directory) recordMembers(tenant string, joined bool, groupID int64, users []int64, by int64) {
	if len(users) > 0 {
		d.events.record(tenant, webhook.MemberRecord(joined, groupID, users, by, millisNow()))
	}
}

func (sg *socialGraph) addConversation(c social.Conversation) {
	sg.convs[c.ID] = c
	sg.topics[c.Topic] = c.ID
	sg.members[c.ID] = make(map[int64]bool)
}

// addMembers adds users and returns those who were no members before.
func (sg *socialGraph) addMembers(conversationID int64, users []int64) []int64 {
	var added []int64
	for _, u := range users {
		if !sg.members[conversationID][u] {
			sg.members[conversationID][u] = true
			added = append(added, u)
		}
	}
	return added
}

// AddMembers adds users to a group conversation; P2P membership is the pair itself.
func (d *Directory) AddMembers(_ context.Context, tenant string, topicName string, users []int64, by int64) error {
	p, err := topic.Parse(topicName)
	if err != nil {
		return apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
	}
	if p.Kind != topic.Group {
		return apperr.New(apperr.InvalidArgument, "members of a P2P conversation cannot change")
	}
	if slices.ContainsFunc(users, func(u int64) bool { return u <= 0 }) {
		return apperr.New(apperr.InvalidArgument, "member ids must be positive")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	id, ok := sg.topics[topicName]
	if !ok {
		return fmt.Errorf("conversation %s: %w", topicName, social.ErrNotFound)
	}
	d.recordMembers(tenant, true, p.GroupID, sg.addMembers(id, users), by)
	return nil
}

// Members lists a topic's members in ascending order; an unknown group has none.
func (d *Directory) Members(_ context.Context, tenant, topicName string) ([]int64, error) {
	p, err := topic.Parse(topicName)
	if err != nil {
		return nil, apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
	}
	if p.Kind == topic.P2P {
		return []int64{p.UserA, p.UserB}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	id, ok := sg.topics[topicName]
	if !ok {
		return nil, nil
	}
	var out []int64
	for u := range sg.members[id] {
		out = append(out, u)
	}
	slices.Sort(out)
	return out, nil
}

func (d *Directory) IsMember(_ context.Context, tenant, topicName string, user int64) (bool, error) {
	p, err := topic.Parse(topicName)
	if err != nil {
		return false, apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
	}
	if p.Kind == topic.P2P {
		return p.Has(user), nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	id, ok := sg.topics[topicName]
	return ok && sg.members[id][user], nil
}

// Conversation looks a conversation up by topic.
func (d *Directory) Conversation(_ context.Context, tenant, topicName string) (social.Conversation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	id, ok := sg.topics[topicName]
	if !ok {
		return social.Conversation{}, fmt.Errorf("conversation %s: %w", topicName, social.ErrNotFound)
	}
	return sg.convs[id], nil
}

// ConversationByID looks a conversation up by its numeric alias.
func (d *Directory) ConversationByID(_ context.Context, tenant string, id int64) (social.Conversation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.graph(tenant).convs[id]
	if !ok {
		return social.Conversation{}, fmt.Errorf("conversation %d: %w", id, social.ErrNotFound)
	}
	return c, nil
}

// EnsureP2P returns the one conversation of a user pair; the first caller's id wins.
func (d *Directory) EnsureP2P(_ context.Context, tenant string, a, b int64, id int64) (social.Conversation, error) {
	if a <= 0 || b <= 0 || a == b || id <= 0 {
		return social.Conversation{}, apperr.New(apperr.InvalidArgument, "a P2P conversation needs two distinct users and an id")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sg := d.graph(tenant)
	pair := [2]int64{min(a, b), max(a, b)}
	if known, ok := sg.pairs[pair]; ok {
		return sg.convs[known], nil
	}
	if _, taken := sg.convs[id]; taken {
		return social.Conversation{}, apperr.New(apperr.Conflict, fmt.Sprintf("conversation id %d is taken", id))
	}
	conv := social.Conversation{ID: id, Topic: topic.ForPair(a, b), Kind: social.KindP2P, CreatedAt: millisNow()}
	sg.pairs[pair] = id
	sg.addConversation(conv)
	sg.addMembers(id, pair[:])
	return conv, nil
}
