package contract

import (
	"context"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// PresenceStore is what the presence records contract runs on: one value implementing both
// ports, as both adapters do.
type PresenceStore interface {
	ports.PresenceRecords
	ports.UserSettings
}

// PresenceFactory returns presence records and an empty tenant.
type PresenceFactory func(t *testing.T) (PresenceStore, string)

// Presence runs the presence records contract (issue 31): last_seen never moves back, a user
// never seen has no record, the hide setting shows in the records.
func Presence(t *testing.T, newStore PresenceFactory) {
	p, tenant := newStore(t)
	ctx := context.Background()
	at := time.UnixMilli(1_796_169_600_123)
	for _, seen := range []time.Time{at, at.Add(-time.Hour)} { // the older one arrives late
		if err := p.Seen(ctx, tenant, 1, seen); err != nil {
			t.Fatalf("Seen: %v", err)
		}
	}
	if s, err := p.Settings(ctx, tenant, 2); err != nil || s != (social.Settings{}) {
		t.Fatalf("settings of a user who saved none: %+v, %v", s, err)
	}
	yes, no := true, false
	if s, err := p.ChangeSettings(ctx, tenant, 2, social.SettingsChange{HidePresence: &yes}); err != nil || s != (social.Settings{HidePresence: true}) {
		t.Fatalf("ChangeSettings of hide_presence = %+v, %v; want only it set", s, err)
	}
	if s, err := p.ChangeSettings(ctx, tenant, 2, social.SettingsChange{HideReceipts: &yes}); err != nil || s != (social.Settings{HidePresence: true, HideReceipts: true}) {
		t.Fatalf("ChangeSettings of hide_receipts = %+v, %v; want hide_presence kept", s, err)
	}
	if s, err := p.Settings(ctx, tenant, 2); err != nil || !s.HidePresence || !s.HideReceipts {
		t.Fatalf("settings after hiding: %+v, %v", s, err)
	}
	recs, err := p.Records(ctx, tenant, []int64{1, 2, 3})
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	if r := recs[1]; !r.LastSeen.Equal(at) || r.Hidden {
		t.Errorf("user 1: %+v; want last seen %v, shown", r, at)
	}
	if r := recs[2]; !r.LastSeen.IsZero() || !r.Hidden {
		t.Errorf("user 2: %+v; want never seen, hidden", r)
	}
	if _, ok := recs[3]; ok {
		t.Errorf("user 3, never seen, has a record: %+v", recs[3])
	}
	if s, err := p.ChangeSettings(ctx, tenant, 2, social.SettingsChange{HidePresence: &no}); err != nil || s != (social.Settings{HideReceipts: true}) {
		t.Fatalf("ChangeSettings showing presence = %+v, %v; want hide_receipts kept", s, err)
	}
	if recs, err := p.Records(ctx, tenant, []int64{2}); err != nil || recs[2].Hidden {
		t.Fatalf("user 2 after showing again: %+v, %v", recs[2], err)
	}
}
