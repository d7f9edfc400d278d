package client

import (
	"context"

	"github.com/imdhq/imd/clients/go/wire"
)

// SetPushToken registers the device's APNs or FCM token (PUSH_TOKEN_SET), replacing the
// device's last one: while none of the user's devices is connected, the server alerts the
// phone through the platform. It answers the token as stored.
func (c *Conn) SetPushToken(ctx context.Context, t wire.PushToken) (wire.PushToken, error) {
	var got wire.PushToken
	err := c.call(ctx, wire.CmdPushTokenSet, t, &got)
	return got, err
}

// DeletePushToken removes the device's token (PUSH_TOKEN_DELETE), e.g. at sign-out; a
// device without one is wire.CodeNotFound.
func (c *Conn) DeletePushToken(ctx context.Context, deviceID string) error {
	var done struct{}
	return c.call(ctx, wire.CmdPushTokenDelete, wire.PushTokenDeleteRequest{DeviceID: deviceID}, &done)
}
