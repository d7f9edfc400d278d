package dispatch

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/typing"
)

// addPresenceCommands registers QUERY_PRESENCE, TYPING and SETTINGS (issue 31) where their
// use cases are wired.
func (d *Dispatcher) addPresenceCommands() {
	if d.deps.Status != nil {
		d.handlers[wire.CmdQueryPresence] = d.queryPresence
		d.handlers[wire.CmdSettings] = d.settings
	}
	if d.deps.Typing != nil {
		d.handlers[wire.CmdTyping] = d.typing
	}
}

// queryPresence answers QUERY_PRESENCE: up to wire.MaxPresenceQuery ids, more is 40001.
func (d *Dispatcher) queryPresence(ctx context.Context, r *request) (any, error) {
	var req wire.QueryPresenceRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	if len(req.UserIDs) > wire.MaxPresenceQuery {
		return nil, apperr.New(apperr.InvalidArgument, fmt.Sprintf("at most %d user_ids", wire.MaxPresenceQuery))
	}
	sts, err := d.deps.Status.Query(ctx, r.identity.Tenant, r.identity.User, req.UserIDs)
	if err != nil {
		return nil, err
	}
	return wire.QueryPresenceResponse{Presence: WirePresence(sts)}, nil
}

// WirePresence is statuses as QUERY_PRESENCE answers them (also the HTTP form).
func WirePresence(sts []presence.Status) []wire.Presence {
	out := make([]wire.Presence, len(sts))
	for i, st := range sts {
		out[i] = wire.Presence{UserID: st.User, State: string(st.State)}
		if !st.LastSeen.IsZero() {
			out[i].LastSeen = st.LastSeen.UnixMilli()
		}
	}
	return out
}

// settings answers SETTINGS: the fields present change, then the settings as stored.
func (d *Dispatcher) settings(ctx context.Context, r *request) (any, error) {
	var req wire.SettingsRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	s, err := d.deps.Status.ChangeSettings(ctx, r.identity.Tenant, r.identity.User, social.SettingsChange{HidePresence: req.HidePresence, HideReceipts: req.HideReceipts})
	if err != nil {
		return nil, err
	}
	return wire.Settings{HidePresence: s.HidePresence, HideReceipts: s.HideReceipts}, nil
}

// typing answers TYPING once the notice was handed to the other members' devices.
func (d *Dispatcher) typing(ctx context.Context, r *request) (any, error) {
	var req wire.TypingRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic, r.conversationID = req.Topic, req.ConversationID
	expires, err := d.deps.Typing.Typing(ctx, typing.Request{
		Tenant: r.identity.Tenant, User: r.identity.User, Device: r.identity.Device, Typing: req.Typing,
		Address: conversation.Address{Topic: req.Topic, ConversationID: req.ConversationID, ToUser: req.ToUser},
	})
	if err != nil {
		return nil, err
	}
	return wire.TypingResponse{ExpiresIn: expires.Milliseconds()}, nil
}
