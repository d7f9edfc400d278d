package ports

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/pushtoken"
)

// PushTokens keeps the native push tokens of a tenant's devices and the alerts given up on
// (docs/DESIGN.md issue-32 "Native push") in the tenant database.
type PushTokens interface {
	// PutToken stores t as the token of (t.User, t.DeviceID), replacing the device's last one.
	PutToken(ctx context.Context, tenant string, t pushtoken.Token) error
	// DeleteToken removes the device's token; removed=false when it had none.
	DeleteToken(ctx context.Context, tenant string, user int64, deviceID string) (removed bool, err error)
	// DeleteTokenValue removes every registration of the token value on platform (a
	// provider called it invalid).
	DeleteTokenValue(ctx context.Context, tenant string, platform pushtoken.Platform, token string) error
	// TokensOf lists the tokens of users, by user then device.
	TokensOf(ctx context.Context, tenant string, users []int64) ([]pushtoken.Token, error)
	// UsersWithTokens lists, ascending and once each, the users with a token registered or
	// replaced at or after since (the zero time: every user with a token).
	UsersWithTokens(ctx context.Context, tenant string, since time.Time) ([]int64, error)
	AddDeadLetter(ctx context.Context, tenant string, d pushtoken.DeadLetter) error
	// DeadLetters lists the provider's dead letters, newest first, at most limit.
	DeadLetters(ctx context.Context, tenant string, provider pushtoken.Platform, limit int) ([]pushtoken.DeadLetter, error)
}

// PushProvider sends one alert to APNs or FCM (adapters/apns, adapters/fcm). Send's error
// wraps pushtoken.ErrInvalidToken when the token is no more and pushtoken.ErrRetryable when a
// later try may succeed; any other error is final.
type PushProvider interface {
	Send(ctx context.Context, a pushtoken.Alert) error
}
