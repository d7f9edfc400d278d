// Package forward sends a copy of a message into another conversation with a reference to its
// origin (issue 31 part 5): the origin's topic, seq, msg_id and sender. The forwarder must be
// able to read the origin as it is now, wherever its month lives; the copy then goes through
// the send path like any message, so it is checked against the destination's rules, its media
// key is admitted there (PROTOCOL §4 "Media keys": a key a message of a readable conversation
// carries), and a retry with the same client_msg_id converges on one copy.
package forward

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

// Reader reads one message as a user may (history's Get): 40301 when the user is not in its
// conversation, 40401 for a seq no month or archive holds.
type Reader interface {
	Get(ctx context.Context, tenant string, user int64, topic string, seq int64) (message.Message, error)
}

// Sender runs the send path.
type Sender interface {
	Send(ctx context.Context, r send.Request) (send.Result, error)
}

// Deps are what a forward reads and sends through.
type Deps struct {
	Messages Reader
	// Hidden hides what the forwarder deleted for themself: it cannot be forwarded either.
	Hidden ports.HiddenRanges
	Sender Sender
}

// Service forwards messages.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service { return &Service{d: d} }

// Request is FORWARD_MESSAGE: message Seq of Topic, sent by User into To.
type Request struct {
	Tenant      string
	User        int64
	Device      uint64
	Topic       string
	Seq         int64
	To          conversation.Address
	ClientMsgID string
	MsgID       int64 // pre-generated, or 0
}

// Origin is the reference a forwarded copy carries in its content, under "forward".
type Origin struct {
	Topic string `json:"topic"`
	Seq   int64  `json:"seq"`
	MsgID int64  `json:"msg_id"`
	From  int64  `json:"from"`
}

// Forward sends the copy and returns its send result.
func (s *Service) Forward(ctx context.Context, r Request) (send.Result, error) {
	orig, err := s.origin(ctx, r)
	if err != nil {
		return send.Result{}, err
	}
	content, ref, err := withOrigin(orig)
	if err != nil {
		return send.Result{}, err
	}
	return s.d.Sender.Send(ctx, send.Request{
		Tenant: r.Tenant, From: r.User, FromDevice: r.Device, Address: r.To, MsgID: r.MsgID,
		// Mentions and the reply refer to the origin's conversation, so the copy has none.
		Draft: message.Draft{ClientMsgID: r.ClientMsgID, Type: orig.Type, Content: content, Forward: ref},
	})
}

// origin reads the message to forward as the forwarder: a member of its conversation who has
// not deleted it for themself, a message neither recalled nor deleted, and no event.
func (s *Service) origin(ctx context.Context, r Request) (message.Message, error) {
	if r.Seq <= 0 {
		return message.Message{}, apperr.New(apperr.InvalidArgument, "seq must be positive")
	}
	m, err := s.d.Messages.Get(ctx, r.Tenant, r.User, r.Topic, r.Seq)
	if err != nil {
		return message.Message{}, err
	}
	switch {
	case m.Status != message.StatusNormal:
		return message.Message{}, message.ErrNotFound
	case m.Type == "system":
		return message.Message{}, apperr.New(apperr.Forbidden, "system messages cannot be forwarded")
	}
	hidden, err := s.d.Hidden.HiddenRanges(ctx, r.Tenant, r.Topic, r.User, r.Seq, r.Seq)
	if err != nil {
		return message.Message{}, apperr.Wrap(apperr.Busy, "deleted ranges unavailable", err)
	}
	if len(hidden) > 0 {
		return message.Message{}, message.ErrNotFound
	}
	return m, nil
}

// withOrigin is the origin's content with the reference set under "forward", and the
// reference; a reference the origin carried, itself a forward, gives way to the message
// forwarded now.
func withOrigin(m message.Message) (content, ref json.RawMessage, err error) {
	fields := map[string]json.RawMessage{}
	if len(m.Content) > 0 {
		if err := json.Unmarshal(m.Content, &fields); err != nil {
			return nil, nil, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("content of %s seq %d: %w", m.Topic, m.Seq, err))
		}
	}
	// Any spelling of the member goes: the copy carries the server's reference alone.
	for name := range fields {
		if strings.EqualFold(name, message.ForwardMember) {
			delete(fields, name)
		}
	}
	ref, err = json.Marshal(Origin{Topic: m.Topic, Seq: m.Seq, MsgID: m.MsgID, From: m.From})
	if err != nil {
		return nil, nil, apperr.Wrap(apperr.Internal, "internal error", err)
	}
	fields[message.ForwardMember] = ref
	content, err = json.Marshal(fields)
	if err != nil {
		return nil, nil, apperr.Wrap(apperr.Internal, "internal error", err)
	}
	return content, ref, nil
}
