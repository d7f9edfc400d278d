// Package conversation resolves what a request addresses (topic, conversation_id or to_user)
// into one conversation and checks that the user may write to or read from it (seed 003 §9.4).
package conversation

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"imd/core/apperr"
	"imd/core/membership"
	"imd/core/social"
	"imd/core/topic"
	"imd/ports"
)

// Address is how a request names a conversation; exactly one field is set.
type Address struct {
	Topic          string
	ConversationID int64
	ToUser         int64
}

// Resolver maps addresses to conversations and checks access.
type Resolver struct {
	dir     ports.Directory
	ids     ports.IDGenerator
	members *membership.Cache

	mu     sync.RWMutex
	byName map[string]social.Conversation // tenant\x00topic; conversations never change once created
}

// NewResolver builds a resolver over the directory.
func NewResolver(dir ports.Directory, ids ports.IDGenerator, members *membership.Cache) *Resolver {
	return &Resolver{dir: dir, ids: ids, members: members, byName: make(map[string]social.Conversation)}
}

// ForWrite resolves an address for a sender and checks the sender may post there: group
// membership, or friendship for P2P. Nothing is written on failure, except that the one
// conversation of a friend pair is created on its first message.
func (r *Resolver) ForWrite(ctx context.Context, tenant string, user int64, a Address) (social.Conversation, error) {
	return r.resolve(ctx, tenant, user, a, true)
}

// ForRead resolves an address for a reader: a member of the group, or one of the P2P pair.
func (r *Resolver) ForRead(ctx context.Context, tenant string, user int64, a Address) (social.Conversation, error) {
	return r.resolve(ctx, tenant, user, a, false)
}

func (r *Resolver) resolve(ctx context.Context, tenant string, user int64, a Address, write bool) (social.Conversation, error) {
	name, err := r.topicOf(ctx, tenant, user, a)
	if err != nil {
		return social.Conversation{}, err
	}
	p, err := topic.Parse(name)
	if err != nil {
		return social.Conversation{}, apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
	}
	switch p.Kind {
	case topic.Group:
		ok, err := r.members.IsMember(ctx, tenant, name, user)
		if err != nil {
			return social.Conversation{}, apperr.Wrap(apperr.Busy, "membership unavailable", err)
		}
		if !ok {
			return social.Conversation{}, apperr.New(apperr.Forbidden, "not a member of this conversation")
		}
		return r.lookup(ctx, tenant, name)
	default:
		if !p.Has(user) {
			return social.Conversation{}, apperr.New(apperr.Forbidden, "not a member of this conversation")
		}
		if write {
			friends, err := r.dir.AreFriends(ctx, tenant, user, p.Peer(user))
			if err != nil {
				return social.Conversation{}, apperr.Wrap(apperr.Busy, "friendship unavailable", err)
			}
			if !friends {
				return social.Conversation{}, apperr.New(apperr.Forbidden, "not friends")
			}
			return r.ensurePair(ctx, tenant, p)
		}
		c, err := r.lookup(ctx, tenant, name)
		if errors.Is(err, social.ErrNotFound) {
			// Nobody wrote yet: the conversation is empty but legitimately readable.
			return social.Conversation{Topic: name, Kind: social.KindP2P}, nil
		}
		return c, err
	}
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
	if len(r.byName) > 200_000 {
		clear(r.byName)
	}
	r.byName[tenant+"\x00"+c.Topic] = c
	r.mu.Unlock()
}
