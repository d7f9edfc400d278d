package mysql

import (
	"context"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/pushtoken"
	"github.com/imdhq/imd/ports"
)

// PushTokens implements ports.PushTokens over the tables of 0015.
type PushTokens struct{ cluster *Cluster }

var _ ports.PushTokens = (*PushTokens)(nil)

// NewPushTokens returns the push tokens of the provisioned tenants of c.
func NewPushTokens(c *Cluster) *PushTokens { return &PushTokens{cluster: c} }

// PutToken upserts t by user and device.
func (s *PushTokens) PutToken(ctx context.Context, tenant string, t pushtoken.Token) error {
	db, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	err = db.q.UpsertPushToken(ctx, sqlcdb.UpsertPushTokenParams{UserID: t.User, DeviceID: t.DeviceID, Platform: string(t.Platform),
		AppID: t.AppID, Token: t.Token, Locale: t.Locale, UpdatedAt: t.UpdatedAt.UTC().Truncate(time.Millisecond)})
	if err != nil {
		return fmt.Errorf("put push token of user %d device %q: %w", t.User, t.DeviceID, err)
	}
	return nil
}

// DeleteToken removes the device's row.
func (s *PushTokens) DeleteToken(ctx context.Context, tenant string, user int64, deviceID string) (bool, error) {
	db, err := s.cluster.tenant(tenant)
	if err != nil {
		return false, err
	}
	n, err := db.q.DeletePushToken(ctx, sqlcdb.DeletePushTokenParams{UserID: user, DeviceID: deviceID})
	if err != nil {
		return false, fmt.Errorf("delete push token of user %d device %q: %w", user, deviceID, err)
	}
	return n > 0, nil
}

// DeleteTokenValue removes the rows holding the token.
func (s *PushTokens) DeleteTokenValue(ctx context.Context, tenant string, platform pushtoken.Platform, token string) error {
	db, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if _, err := db.q.DeletePushTokenValue(ctx, sqlcdb.DeletePushTokenValueParams{Platform: string(platform), Token: token}); err != nil {
		return fmt.Errorf("delete %s push token: %w", platform, err)
	}
	return nil
}

// TokensOf reads the users' rows.
func (s *PushTokens) TokensOf(ctx context.Context, tenant string, users []int64) ([]pushtoken.Token, error) {
	if len(users) == 0 {
		return nil, nil
	}
	db, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := db.q.PushTokensOfUsers(ctx, users)
	if err != nil {
		return nil, fmt.Errorf("read push tokens of %d users: %w", len(users), err)
	}
	out := make([]pushtoken.Token, len(rows))
	for i, r := range rows {
		out[i] = pushtoken.Token{User: r.UserID, DeviceID: r.DeviceID, Platform: pushtoken.Platform(r.Platform), AppID: r.AppID,
			Token: r.Token, Locale: r.Locale, UpdatedAt: r.UpdatedAt.UTC()}
	}
	return out, nil
}

// UsersWithTokens reads the users of the rows updated since.
func (s *PushTokens) UsersWithTokens(ctx context.Context, tenant string, since time.Time) ([]int64, error) {
	db, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	users, err := db.q.UsersWithPushTokens(ctx, since.UTC())
	if err != nil {
		return nil, fmt.Errorf("read users with push tokens since %v: %w", since, err)
	}
	return users, nil
}

// AddDeadLetter inserts d, its error cut to the column.
func (s *PushTokens) AddDeadLetter(ctx context.Context, tenant string, d pushtoken.DeadLetter) error {
	db, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	msg := d.LastError
	if r := []rune(msg); len(r) > maxDeadLetterError {
		msg = string(r[:maxDeadLetterError])
	}
	err = db.q.InsertPushDeadLetter(ctx, sqlcdb.InsertPushDeadLetterParams{Provider: string(d.Provider), UserID: d.User, DeviceID: d.DeviceID,
		MsgID: d.MsgID, Attempts: int32(min(d.Attempts, 1<<30)), LastError: msg, CreatedAt: d.CreatedAt.UTC().Truncate(time.Millisecond)})
	if err != nil {
		return fmt.Errorf("add %s push dead letter: %w", d.Provider, err)
	}
	return nil
}

// DeadLetters reads the provider's newest dead letters.
func (s *PushTokens) DeadLetters(ctx context.Context, tenant string, provider pushtoken.Platform, limit int) ([]pushtoken.DeadLetter, error) {
	db, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := db.q.PushDeadLetters(ctx, sqlcdb.PushDeadLettersParams{Provider: string(provider), Limit: int32(min(max(limit, 0), 1<<30))})
	if err != nil {
		return nil, fmt.Errorf("list %s push dead letters: %w", provider, err)
	}
	out := make([]pushtoken.DeadLetter, len(rows))
	for i, r := range rows {
		out[i] = pushtoken.DeadLetter{ID: r.ID, Provider: pushtoken.Platform(r.Provider), User: r.UserID, DeviceID: r.DeviceID, MsgID: r.MsgID,
			Attempts: int(r.Attempts), LastError: r.LastError, CreatedAt: r.CreatedAt.UTC()}
	}
	return out, nil
}
