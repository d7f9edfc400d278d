package reactions

import (
	"context"
	"errors"
	"fmt"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/conversation"
)

// Pin pins (unpin false) or unpins a message of any month in its conversation. In a group its
// owner and admins may, in a P2P conversation both members (issue 31). Doing it twice changes
// nothing the second time. The answer is the conversation's pins afterwards, newest first.
func (s *Service) Pin(ctx context.Context, t Target, unpin bool) ([]msgref.Pin, error) {
	action := "pin"
	if unpin {
		action = "unpin"
	}
	pins, err := s.pin(ctx, t, unpin, action)
	s.count("message_pin_total", action, err)
	return pins, err
}

func (s *Service) pin(ctx context.Context, t Target, unpin bool, action string) ([]msgref.Pin, error) {
	conv, m, err := s.target(ctx, t, s.d.Resolver.ForEvent)
	if err != nil {
		return nil, err
	}
	if err := s.mayPin(ctx, t, conv); err != nil {
		return nil, err
	}
	at, changed, by := s.d.Clock.Now(), false, t.User
	if unpin {
		changed, err = s.d.Pins.RemovePin(ctx, t.Tenant, t.Topic, t.Seq)
	} else {
		if err := reactable(m); err != nil {
			return nil, err
		}
		var p msgref.Pin
		p, changed, err = s.d.Pins.AddPin(ctx, t.Tenant, msgref.Pin{Topic: t.Topic, Seq: t.Seq, By: t.User, At: at}, s.cfg.MaxPins)
		at, by = p.At, p.By
	}
	switch {
	case errors.Is(err, msgref.ErrPinsFull):
		return nil, err
	case err != nil:
		return nil, apperr.Wrap(apperr.Busy, "pins unavailable, retry", err)
	}
	pins, err := s.d.Pins.Pins(ctx, t.Tenant, t.Topic)
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "pins unavailable, retry", err)
	}
	// Only the retry of the request that pinned may write its event again: a pin by someone
	// else of a message already pinned changes nothing and announces nothing (issue 31).
	if !changed && (unpin || by != t.User || s.d.Clock.Now().Sub(at) > retryWindow) {
		return pins, nil
	}
	return pins, s.publish(ctx, t, conv, event{Event: action, Seq: t.Seq}, at, "")
}

// Pins lists a conversation's pinned messages, newest first, for any member.
func (s *Service) Pins(ctx context.Context, tenant string, user int64, topicName string) ([]msgref.Pin, error) {
	if _, err := s.d.Resolver.ForRead(ctx, tenant, user, conversation.Address{Topic: topicName}); err != nil {
		return nil, err
	}
	pins, err := s.d.Pins.Pins(ctx, tenant, topicName)
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "pins unavailable, retry", err)
	}
	return pins, nil
}

// mayPin lets a group's owner and admins pin, and both members of a P2P conversation (target
// checked membership already).
func (s *Service) mayPin(ctx context.Context, t Target, conv social.Conversation) error {
	if conv.Kind != social.KindGroup {
		return nil
	}
	member, err := s.d.Groups.GroupMember(ctx, t.Tenant, conv.GroupID, t.User)
	switch {
	case errors.Is(err, social.ErrNotFound):
		return apperr.New(apperr.Forbidden, "not a member")
	case err != nil:
		return apperr.Wrap(apperr.Busy, "group lookup failed", fmt.Errorf("role of %d in group %d: %w", t.User, conv.GroupID, err))
	case !member.Role.Manages():
		return apperr.New(apperr.Forbidden, "only the group's owner and admins may pin messages")
	}
	return nil
}
