package nativepush

import (
	"context"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/pushtoken"
	"github.com/imdhq/imd/ports"
)

// Registry registers and removes a device's push token: PUT/DELETE /api/v1/push-tokens and
// the PUSH_TOKEN_SET/PUSH_TOKEN_DELETE frames (docs/PROTOCOL.md) answer through it.
type Registry struct {
	tokens  ports.PushTokens
	clock   ports.Clock
	holders *Holders // told of each change at once; nil: none to tell
}

// NewRegistry returns the registry over tokens, keeping holders up to date.
func NewRegistry(tokens ports.PushTokens, clock ports.Clock, holders *Holders) *Registry {
	return &Registry{tokens: tokens, clock: clock, holders: holders}
}

// Register parses body (pushtoken.ParseRegistration: bad input is 40001 and changes nothing)
// and stores it as the token of the user's device, replacing the device's last one.
func (r *Registry) Register(ctx context.Context, tenant string, user int64, body []byte) (pushtoken.Token, error) {
	reg, err := pushtoken.ParseRegistration(body)
	if err != nil {
		return pushtoken.Token{}, err
	}
	t := reg.For(user, r.clock.Now())
	if err := r.tokens.PutToken(ctx, tenant, t); err != nil {
		return pushtoken.Token{}, apperr.Wrap(apperr.Busy, "push token not stored", err)
	}
	r.holders.Added(tenant, user)
	return t, nil
}

// Unregister removes the device's token: 40401 when it has none (the client is done anyway).
func (r *Registry) Unregister(ctx context.Context, tenant string, user int64, deviceID string) error {
	if err := pushtoken.ValidDeviceID(deviceID); err != nil {
		return err
	}
	removed, err := r.tokens.DeleteToken(ctx, tenant, user, deviceID)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "push token not removed", err)
	}
	if !removed {
		return apperr.New(apperr.NotFound, "no push token for this device")
	}
	r.forget(ctx, tenant, user)
	return nil
}

// forget takes user out of the holders when this was their last token. Unread, or with a
// token left, they stay: a holder too many costs a wait, never a wrong alert (DESIGN issue-32
// "Native push").
func (r *Registry) forget(ctx context.Context, tenant string, user int64) {
	if r.holders == nil {
		return
	}
	if left, err := r.tokens.TokensOf(ctx, tenant, []int64{user}); err == nil && len(left) == 0 {
		r.holders.Removed(tenant, user)
	}
}

// MaxDeadLetters is the most dead letters one read lists.
const MaxDeadLetters = 100

// DeadLetters lists the provider's newest dead letters, at most limit (1 to MaxDeadLetters),
// for the admin API and the console's Push page; another provider is 40001.
func (r *Registry) DeadLetters(ctx context.Context, tenant, provider string, limit int) ([]pushtoken.DeadLetter, error) {
	p := pushtoken.Platform(provider)
	if p != pushtoken.APNs && p != pushtoken.FCM {
		return nil, apperr.New(apperr.InvalidArgument, `provider must be "apns" or "fcm"`)
	}
	ds, err := r.tokens.DeadLetters(ctx, tenant, p, min(max(limit, 1), MaxDeadLetters))
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "push dead letters not read", err)
	}
	return ds, nil
}
