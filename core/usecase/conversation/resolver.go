// Package conversation resolves what a request addresses (topic, conversation_id or to_user)
// into one conversation and checks that the user may write to or read from it (seed 003 §9.4).
package conversation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/kit/singleflight"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/ports"
)

// SystemType is the message type only system accounts may send.
const SystemType = "system"

// DefaultRulesTTL is how long a cached send rule (a pair's relation, a group's policy) is
// believed; changes made through this process invalidate at once. It matches the member
// cache, so a node that did not make a change is stale for the same short time either way.
const DefaultRulesTTL = 5 * time.Second

// maxCached bounds each cache; past it the cache starts over rather than grow without limit.
const maxCached = 200_000

// Address is how a request names a conversation; exactly one field is set.
type Address struct {
	Topic          string
	ConversationID int64
	ToUser         int64
}

// Graph is what the resolver reads: the directory and the send rules. The directory adapters
// implement both.
type Graph interface {
	ports.Directory
	ports.SendRules
}

// Resolver maps addresses to conversations and checks access.
type Resolver struct {
	dir     Graph
	ids     ports.IDGenerator
	members *membership.Cache
	clock   ports.Clock
	ttl     time.Duration
	system  []int64 // sorted; accounts that may send anywhere, and alone send type system

	mu        sync.RWMutex
	byName    map[string]social.Conversation // tenant\x00topic; conversations never change once created
	policies  map[string]cachedPolicy        // tenant\x00topic
	relations map[string]cachedRelation      // tenant\x00small\x00big

	// One read per key at a time: when an entry expires under load, one request reads it
	// and the others wait for that answer.
	policyLoads   singleflight.Group[cachedPolicy]
	relationLoads singleflight.Group[social.Relation]
}

type cachedPolicy struct {
	muteAll bool
	special map[int64]social.Member
	expires time.Time
}

type cachedRelation struct {
	rel     social.Relation
	expires time.Time
}

// Option configures a Resolver.
type Option func(*Resolver)

// WithClock sets the clock mutes and cache lifetimes are measured with (default: the wall clock).
func WithClock(c ports.Clock) Option { return func(r *Resolver) { r.clock = c } }

// WithRulesTTL sets how long cached send rules live (default DefaultRulesTTL).
func WithRulesTTL(d time.Duration) Option { return func(r *Resolver) { r.ttl = d } }

// WithSystemAccounts names the system accounts (config message.system_accounts): they may
// send to any user and any group, muted or not, and only they may send type system.
func WithSystemAccounts(ids []int64) Option {
	return func(r *Resolver) {
		r.system = slices.Clone(ids)
		slices.Sort(r.system)
	}
}

// NewResolver builds a resolver over the social graph.
func NewResolver(dir Graph, ids ports.IDGenerator, members *membership.Cache, opts ...Option) *Resolver {
	r := &Resolver{
		dir: dir, ids: ids, members: members, clock: wallClock{}, ttl: DefaultRulesTTL,
		byName:    make(map[string]social.Conversation),
		policies:  make(map[string]cachedPolicy),
		relations: make(map[string]cachedRelation),
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// wallClock is the default clock: the node's own time, which is what mute expiry means to
// the user who was muted.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// IsSystemAccount reports whether user is a configured system account.
func (r *Resolver) IsSystemAccount(user int64) bool {
	_, found := slices.BinarySearch(r.system, user)
	return found
}

// ForSend resolves an address for a sender of a message of msgType and checks the send is
// allowed (seed 003 §9.4): P2P needs friendship and no block either way; a group needs
// membership, no running mute of the member, and no mute-all unless the member is an owner or
// admin; type system comes from system
// accounts only, which may send anywhere. Nothing is written on failure, except that the one
// conversation of a pair is created on its first message.
func (r *Resolver) ForSend(ctx context.Context, tenant string, user int64, a Address, msgType string) (social.Conversation, error) {
	system := r.IsSystemAccount(user)
	if msgType == SystemType && !system {
		return social.Conversation{}, apperr.New(apperr.Forbidden, "only system accounts send system messages")
	}
	p, err := r.parse(ctx, tenant, user, a)
	if err != nil {
		return social.Conversation{}, err
	}
	switch {
	case system && p.Kind == topic.Group:
		return r.lookup(ctx, tenant, p.Name)
	case system:
		if !p.Has(user) {
			return social.Conversation{}, apperr.New(apperr.Forbidden, "not a member of this conversation")
		}
		if err := r.requireUser(ctx, tenant, p.Peer(user)); err != nil {
			return social.Conversation{}, err
		}
		return r.ensurePair(ctx, tenant, p)
	case p.Kind == topic.Group:
		if err := r.checkGroupSend(ctx, tenant, p, user); err != nil {
			return social.Conversation{}, err
		}
		return r.lookup(ctx, tenant, p.Name)
	}
	if err := r.checkPairSend(ctx, tenant, p, user); err != nil {
		return social.Conversation{}, err
	}
	return r.ensurePair(ctx, tenant, p)
}

// ForEvent resolves an address for a member acting in a conversation without sending a
// message: a reaction, a pin, a typing notice (issue 31). It checks the rights ForSend checks
// of a user (membership and mute in a group; friendship and no block in a pair) but creates no
// conversation: a pair nobody wrote in yet is answered as ForRead answers it.
func (r *Resolver) ForEvent(ctx context.Context, tenant string, user int64, a Address) (social.Conversation, error) {
	p, err := r.parse(ctx, tenant, user, a)
	if err != nil {
		return social.Conversation{}, err
	}
	if p.Kind == topic.Group {
		if err := r.checkGroupSend(ctx, tenant, p, user); err != nil {
			return social.Conversation{}, err
		}
		return r.lookup(ctx, tenant, p.Name)
	}
	if err := r.checkPairSend(ctx, tenant, p, user); err != nil {
		return social.Conversation{}, err
	}
	return r.pair(ctx, tenant, p)
}

// ForRead resolves an address for a reader: a member of the group, or one of the P2P pair.
func (r *Resolver) ForRead(ctx context.Context, tenant string, user int64, a Address) (social.Conversation, error) {
	p, err := r.parse(ctx, tenant, user, a)
	if err != nil {
		return social.Conversation{}, err
	}
	if p.Kind == topic.Group {
		if err := r.requireMember(ctx, tenant, p.Name, user); err != nil {
			return social.Conversation{}, err
		}
		return r.lookup(ctx, tenant, p.Name)
	}
	if !p.Has(user) {
		return social.Conversation{}, apperr.New(apperr.Forbidden, "not a member of this conversation")
	}
	return r.pair(ctx, tenant, p)
}

// pair returns a pair's conversation, or an empty one if nobody wrote yet: legitimately
// readable, and created by the first message only.
func (r *Resolver) pair(ctx context.Context, tenant string, p topic.Parsed) (social.Conversation, error) {
	c, err := r.lookup(ctx, tenant, p.Name)
	if apperr.CodeOf(err) == apperr.NotFound {
		return social.Conversation{Topic: p.Name, Kind: social.KindP2P}, nil
	}
	return c, err
}

// checkPairSend lets one of a pair send to the other: friends, and no block either way.
func (r *Resolver) checkPairSend(ctx context.Context, tenant string, p topic.Parsed, user int64) error {
	if !p.Has(user) {
		return apperr.New(apperr.Forbidden, "not a member of this conversation")
	}
	rel, err := r.Relation(ctx, tenant, user, p.Peer(user))
	if err != nil {
		return err
	}
	if rel.Blocked || !rel.Friends {
		// A deleted peer lost its friendships: say it is gone (40401), not "not friends"
		// (DESIGN §8.1). Only refusals pay the lookup.
		if err := r.requireUser(ctx, tenant, p.Peer(user)); err != nil {
			return err
		}
	}
	switch {
	case rel.Blocked:
		return apperr.New(apperr.Forbidden, "blocked")
	case !rel.Friends:
		return apperr.New(apperr.Forbidden, "not friends")
	}
	return nil
}

// InvalidateGroup forgets what is cached about a group topic (members, roles, mutes) after a
// change made through this process.
func (r *Resolver) InvalidateGroup(tenant, topicName string) {
	r.members.Invalidate(tenant, topicName)
	r.mu.Lock()
	delete(r.policies, tenant+"\x00"+topicName)
	r.mu.Unlock()
}

// InvalidatePair forgets the cached relation of two users after a friendship or block change.
func (r *Resolver) InvalidatePair(tenant string, a, b int64) {
	r.mu.Lock()
	delete(r.relations, pairKey(tenant, a, b))
	r.mu.Unlock()
}

func (r *Resolver) parse(ctx context.Context, tenant string, user int64, a Address) (topic.Parsed, error) {
	name, err := r.topicOf(ctx, tenant, user, a)
	if err != nil {
		return topic.Parsed{}, err
	}
	p, err := topic.Parse(name)
	if err != nil {
		return topic.Parsed{}, apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
	}
	return p, nil
}

func (r *Resolver) requireMember(ctx context.Context, tenant, name string, user int64) error {
	ok, err := r.members.IsMember(ctx, tenant, name, user)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "membership unavailable", err)
	}
	if !ok {
		return apperr.New(apperr.Forbidden, "not a member of this conversation")
	}
	return nil
}

func (r *Resolver) requireUser(ctx context.Context, tenant string, user int64) error {
	ok, err := r.dir.UserExists(ctx, tenant, user)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "user lookup failed", err)
	}
	if !ok {
		return apperr.New(apperr.NotFound, "user not found: never created, or deleted")
	}
	return nil
}

// checkGroupSend applies membership, the member's own mute and mute-all (which spares owners
// and admins), all from caches.
func (r *Resolver) checkGroupSend(ctx context.Context, tenant string, p topic.Parsed, user int64) error {
	if err := r.requireMember(ctx, tenant, p.Name, user); err != nil {
		return err
	}
	pol, err := r.policy(ctx, tenant, p)
	if err != nil {
		return err
	}
	m, special := pol.special[user]
	switch {
	case special && m.MutedAt(r.clock.Now()):
		return apperr.New(apperr.Forbidden, "you are muted in this group")
	case pol.muteAll && !(special && m.Role.Manages()):
		return apperr.New(apperr.Forbidden, "the group is muted")
	}
	return nil
}

func (r *Resolver) policy(ctx context.Context, tenant string, p topic.Parsed) (cachedPolicy, error) {
	key := tenant + "\x00" + p.Name
	now := r.clock.Now()
	r.mu.RLock()
	c, ok := r.policies[key]
	r.mu.RUnlock()
	if ok && now.Before(c.expires) {
		return c, nil
	}
	return r.policyLoads.Do(ctx, key, func(ctx context.Context) (cachedPolicy, error) {
		pol, err := r.dir.GroupPolicy(ctx, tenant, p.GroupID, now)
		if errors.Is(err, social.ErrNotFound) {
			return cachedPolicy{}, apperr.New(apperr.Forbidden, "not a member of this conversation")
		}
		if err != nil {
			return cachedPolicy{}, apperr.Wrap(apperr.Busy, "group rules unavailable", err)
		}
		c := cachedPolicy{muteAll: pol.MuteAll, special: make(map[int64]social.Member, len(pol.Special)), expires: now.Add(r.ttl)}
		for _, m := range pol.Special {
			c.special[m.UserID] = m
		}
		r.mu.Lock()
		if len(r.policies) >= maxCached {
			clear(r.policies)
		}
		r.policies[key] = c
		r.mu.Unlock()
		return c, nil
	})
}

func pairKey(tenant string, a, b int64) string {
	return fmt.Sprintf("%s\x00%d\x00%d", tenant, min(a, b), max(a, b))
}

// Relation is the relation of two users, friendship and a block either way, cached while it
// allows sends.
func (r *Resolver) Relation(ctx context.Context, tenant string, a, b int64) (social.Relation, error) {
	key := pairKey(tenant, a, b)
	now := r.clock.Now()
	r.mu.RLock()
	c, ok := r.relations[key]
	r.mu.RUnlock()
	if ok && now.Before(c.expires) {
		return c.rel, nil
	}
	return r.relationLoads.Do(ctx, key, func(ctx context.Context) (social.Relation, error) {
		rel, err := r.dir.Relation(ctx, tenant, a, b)
		if err != nil {
			return social.Relation{}, apperr.Wrap(apperr.Busy, "friendship unavailable", err)
		}
		if !rel.Friends || rel.Blocked {
			// Only answers that allow a send are cached: pairs that chat stay off MySQL, while a
			// new friendship or a lifted block works at once on every node, however it was made.
			return rel, nil
		}
		r.mu.Lock()
		if len(r.relations) >= maxCached {
			clear(r.relations)
		}
		r.relations[key] = cachedRelation{rel: rel, expires: now.Add(r.ttl)}
		r.mu.Unlock()
		return rel, nil
	})
}

func (r *Resolver) topicOf(ctx context.Context, tenant string, user int64, a Address) (string, error) {
	switch {
	case a.Topic != "":
		return a.Topic, nil
	case a.ToUser != 0:
		if a.ToUser < 0 || a.ToUser == user {
			return "", apperr.New(apperr.InvalidArgument, "invalid to_user")
		}
		return topic.ForPair(user, a.ToUser), nil
	case a.ConversationID > 0:
		c, err := r.dir.ConversationByID(ctx, tenant, a.ConversationID)
		if errors.Is(err, social.ErrNotFound) {
			return "", apperr.New(apperr.NotFound, "conversation not found")
		}
		if err != nil {
			return "", apperr.Wrap(apperr.Busy, "conversation lookup failed", err)
		}
		r.remember(tenant, c)
		return c.Topic, nil
	}
	return "", apperr.New(apperr.InvalidArgument, "topic, conversation_id or to_user is required")
}

func (r *Resolver) lookup(ctx context.Context, tenant, name string) (social.Conversation, error) {
	r.mu.RLock()
	c, ok := r.byName[tenant+"\x00"+name]
	r.mu.RUnlock()
	if ok {
		return c, nil
	}
	c, err := r.dir.Conversation(ctx, tenant, name)
	if errors.Is(err, social.ErrNotFound) {
		return social.Conversation{}, apperr.New(apperr.NotFound, "conversation not found")
	}
	if err != nil {
		return social.Conversation{}, apperr.Wrap(apperr.Busy, "conversation lookup failed", err)
	}
	r.remember(tenant, c)
	return c, nil
}

func (r *Resolver) ensurePair(ctx context.Context, tenant string, p topic.Parsed) (social.Conversation, error) {
	r.mu.RLock()
	c, ok := r.byName[tenant+"\x00"+p.Name]
	r.mu.RUnlock()
	if ok {
		return c, nil
	}
	id, err := r.ids.NextID()
	if err != nil {
		return social.Conversation{}, apperr.Wrap(apperr.Busy, "id generation failed", err)
	}
	c, err = r.dir.EnsureP2P(ctx, tenant, p.UserA, p.UserB, id)
	if err != nil {
		return social.Conversation{}, apperr.Wrap(apperr.Busy, "conversation setup failed", fmt.Errorf("ensure p2p %s: %w", p.Name, err))
	}
	r.remember(tenant, c)
	return c, nil
}

func (r *Resolver) remember(tenant string, c social.Conversation) {
	r.mu.Lock()
	if len(r.byName) >= maxCached {
		clear(r.byName)
	}
	r.byName[tenant+"\x00"+c.Topic] = c
	r.mu.Unlock()
}
