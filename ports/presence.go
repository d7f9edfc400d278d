package ports

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/domain/social"
)

// PresenceRecords keeps what must outlive Redis of users' presence (issue 31): when each was
// last seen online, and whether each hides it.
type PresenceRecords interface {
	// Records returns the users' records; a user with none is absent (never seen, not hidden).
	Records(ctx context.Context, tenant string, users []int64) (map[int64]presence.Record, error)
	// Seen raises the user's last_seen to at; it never moves back.
	Seen(ctx context.Context, tenant string, user int64, at time.Time) error
}

// UserSettings stores each user's own settings (social.Settings).
type UserSettings interface {
	// Settings returns the user's settings; a user who never saved any has the zero value.
	Settings(ctx context.Context, tenant string, user int64) (social.Settings, error)
	// ChangeSettings sets the settings c names, in one step that leaves the others as stored,
	// so two changes of different settings never undo each other (issue 31), and returns the
	// user's settings afterwards.
	ChangeSettings(ctx context.Context, tenant string, user int64, c social.SettingsChange) (social.Settings, error)
}
