package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// Presence is ports.PresenceRecords and ports.UserSettings over t_user_last_seen and
// t_user_settings (0010, issue 31): what must outlive Redis of users' presence.
type Presence struct{ cluster *Cluster }

var (
	_ ports.PresenceRecords = (*Presence)(nil)
	_ ports.UserSettings    = (*Presence)(nil)
)

// NewPresence returns the presence records of the provisioned tenants of c.
func NewPresence(c *Cluster) *Presence { return &Presence{cluster: c} }

// Records implements ports.PresenceRecords: two indexed reads by primary key.
func (p *Presence) Records(ctx context.Context, tenant string, users []int64) (map[int64]presence.Record, error) {
	out := make(map[int64]presence.Record, len(users))
	if len(users) == 0 {
		return out, nil
	}
	t, err := p.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	seen, err := t.q.LastSeenOf(ctx, users)
	if err != nil {
		return nil, fmt.Errorf("last_seen of %d users of %s: %w", len(users), tenant, err)
	}
	for _, r := range seen {
		out[r.UserID] = presence.Record{LastSeen: time.UnixMilli(r.LastSeen)}
	}
	hidden, err := t.q.HiddenOf(ctx, users)
	if err != nil {
		return nil, fmt.Errorf("hidden presence of %d users of %s: %w", len(users), tenant, err)
	}
	for _, u := range hidden {
		r := out[u]
		r.Hidden = true
		out[u] = r
	}
	return out, nil
}

// Seen implements ports.PresenceRecords.
func (p *Presence) Seen(ctx context.Context, tenant string, user int64, at time.Time) error {
	t, err := p.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.RaiseLastSeen(ctx, sqlcdb.RaiseLastSeenParams{UserID: user, LastSeen: at.UnixMilli()}); err != nil {
		return fmt.Errorf("last_seen of user %d of %s: %w", user, tenant, err)
	}
	return nil
}

// Settings implements ports.UserSettings.
func (p *Presence) Settings(ctx context.Context, tenant string, user int64) (social.Settings, error) {
	t, err := p.cluster.tenant(tenant)
	if err != nil {
		return social.Settings{}, err
	}
	row, err := t.q.UserSettings(ctx, user)
	if errors.Is(err, sql.ErrNoRows) {
		return social.Settings{}, nil
	}
	if err != nil {
		return social.Settings{}, fmt.Errorf("settings of user %d of %s: %w", user, tenant, err)
	}
	return social.Settings{HidePresence: row.HidePresence, HideReceipts: row.HideReceipts}, nil
}

// ChangeSettings implements ports.UserSettings: one upsert sets the named settings and keeps
// the others, then a read by primary key answers what is stored.
func (p *Presence) ChangeSettings(ctx context.Context, tenant string, user int64, c social.SettingsChange) (social.Settings, error) {
	t, err := p.cluster.tenant(tenant)
	if err != nil {
		return social.Settings{}, err
	}
	if err := t.q.ChangeUserSettings(ctx, sqlcdb.ChangeUserSettingsParams{UserID: user, HidePresence: nullBool(c.HidePresence), HideReceipts: nullBool(c.HideReceipts)}); err != nil {
		return social.Settings{}, fmt.Errorf("change settings of user %d of %s: %w", user, tenant, err)
	}
	return p.Settings(ctx, tenant, user)
}

// nullBool is NULL for a setting a change leaves as stored.
func nullBool(b *bool) sql.NullBool {
	if b == nil {
		return sql.NullBool{}
	}
	return sql.NullBool{Bool: *b, Valid: true}
}
