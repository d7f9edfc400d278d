package dispatch

import (
	"context"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/pushtoken"
)

// PushTokenRegistry registers native push tokens (core/usecase/nativepush.Registry).
type PushTokenRegistry interface {
	Register(ctx context.Context, tenant string, user int64, body []byte) (pushtoken.Token, error)
	Unregister(ctx context.Context, tenant string, user int64, deviceID string) error
}

// addPushTokenCommands registers PUSH_TOKEN_SET and PUSH_TOKEN_DELETE (issue 32) where native
// push tokens are wired.
func (d *Dispatcher) addPushTokenCommands() {
	if d.deps.PushTokens != nil {
		d.handlers[wire.CmdPushTokenSet] = d.pushTokenSet
		d.handlers[wire.CmdPushTokenDelete] = d.pushTokenDelete
	}
}

// pushTokenSet hands the raw body to the registry's one parser (pushtoken.ParseRegistration),
// as PUT /api/v1/push-tokens does, so both refuse the same bodies the same way.
func (d *Dispatcher) pushTokenSet(ctx context.Context, r *request) (any, error) {
	body := r.frame.Body
	if len(body) == 0 {
		body = []byte("{}")
	}
	t, err := d.deps.PushTokens.Register(ctx, r.identity.Tenant, r.identity.User, body)
	if err != nil {
		return nil, err
	}
	return wire.PushToken{DeviceID: t.DeviceID, Platform: string(t.Platform), AppID: t.AppID, Token: t.Token, Locale: t.Locale}, nil
}

func (d *Dispatcher) pushTokenDelete(ctx context.Context, r *request) (any, error) {
	var req wire.PushTokenDeleteRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	if err := d.deps.PushTokens.Unregister(ctx, r.identity.Tenant, r.identity.User, req.DeviceID); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}
