package runtime

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// ClockGuard refuses an ID clock that is behind an id it issued before (DESIGN §1 IDs).
type ClockGuard interface {
	CheckClock(lastID int64) error
}

// StorageDeps are what readying a tenant's database takes.
type StorageDeps struct {
	Databases  ports.TenantStorage
	Watermarks ports.IDWatermark
	Clock      ClockGuard
}

// NewReadyStorage provisions a tenant's database, then refuses to go on while the ID clock is
// behind the newest msg_id the tenant has stored.
func NewReadyStorage(d StorageDeps) ReadyStorage {
	return func(ctx context.Context, t tenant.Info) error {
		if err := d.Databases.Provision(ctx, t.Name, t.Database, t.DSN); err != nil {
			return fmt.Errorf("provision tenant %s: %w", t.Name, err)
		}
		last, err := d.Watermarks.MaxMessageID(ctx, t.Name)
		if err != nil {
			return fmt.Errorf("newest msg_id of %s: %w", t.Name, err)
		}
		if err := d.Clock.CheckClock(last); err != nil {
			return fmt.Errorf("tenant %s: %w", t.Name, err)
		}
		return nil
	}
}
