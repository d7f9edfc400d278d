// Package favorites keeps users' saved messages (seed 000 §8: 收藏). A favorite names
// topic+seq only; listing reads each message through core/usecase/history, which finds it in a live
// month, the archive or a restored table, and checks again that the user may still read it.
package favorites

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

// Page sizes of List.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Deps are what favorites use.
type Deps struct {
	Store   ports.Favorites
	History *history.Service
	Hidden  ports.HiddenRanges
	Clock   ports.Clock
}

// Service saves, removes and lists favorites.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service { return &Service{d: d} }

// Add saves a message the user can read; saving it again returns the first favorite.
func (s *Service) Add(ctx context.Context, tenant string, user int64, topicName string, seq int64) (msgref.Favorite, error) {
	if _, err := s.readable(ctx, tenant, user, topicName, seq); err != nil {
		return msgref.Favorite{}, err
	}
	f, err := s.d.Store.AddFavorite(ctx, tenant, msgref.Favorite{User: user, Topic: topicName, Seq: seq, CreatedAt: s.d.Clock.Now().UTC()})
	if err != nil {
		return msgref.Favorite{}, apperr.Wrap(apperr.Busy, "favorites unavailable", err)
	}
	return f, nil
}

// Remove deletes a favorite; 40401 when the user had none of the message.
func (s *Service) Remove(ctx context.Context, tenant string, user int64, topicName string, seq int64) error {
	removed, err := s.d.Store.RemoveFavorite(ctx, tenant, user, topicName, seq)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "favorites unavailable", err)
	}
	if !removed {
		return apperr.New(apperr.NotFound, "no such favorite")
	}
	return nil
}

// Saved is a favorite with its message as the user may read it now; Message is nil when the
// user can no longer read it (left the conversation, deleted it for themself, or the
// message's month was purged).
type Saved struct {
	msgref.Favorite
	Message *message.Message
}

// List pages the user's favorites newest first, ids below before (0: from the newest).
func (s *Service) List(ctx context.Context, tenant string, user, before int64, limit int) ([]Saved, error) {
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return nil, apperr.New(apperr.InvalidArgument, fmt.Sprintf("limit must be 1-%d", MaxLimit))
	}
	if before < 0 {
		return nil, apperr.New(apperr.InvalidArgument, "before must not be negative")
	}
	fs, err := s.d.Store.Favorites(ctx, tenant, user, before, limit)
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "favorites unavailable", err)
	}
	out := make([]Saved, len(fs))
	for i, f := range fs {
		out[i].Favorite = f
		m, err := s.readable(ctx, tenant, user, f.Topic, f.Seq)
		switch apperr.CodeOf(err) {
		case apperr.OK:
			out[i].Message = &m
		case apperr.NotFound, apperr.Forbidden:
		default:
			return nil, err
		}
	}
	return out, nil
}

// readable reads a message as the user: a member of its conversation (history checks), and
// not in a range the user deleted for themself (40401 then, as if it were gone).
func (s *Service) readable(ctx context.Context, tenant string, user int64, topicName string, seq int64) (message.Message, error) {
	m, err := s.d.History.Get(ctx, tenant, user, topicName, seq)
	if err != nil {
		return message.Message{}, err
	}
	hidden, err := s.d.Hidden.HiddenRanges(ctx, tenant, topicName, user, seq, seq)
	if err != nil {
		return message.Message{}, apperr.Wrap(apperr.Busy, "deleted ranges unavailable", err)
	}
	if len(hidden) > 0 {
		return message.Message{}, message.ErrNotFound
	}
	return m, nil
}
