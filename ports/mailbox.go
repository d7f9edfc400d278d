package ports

import (
	"context"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/mailbox"
)

// Mailbox is t_mailbox_events and t_device_sync_cursors (seed 003 §10.3): per-user control
// events and failed pushes, never one row per delivered message.
type Mailbox interface {
	// Append stores the events and returns them with Seq set: each user's next seqs, one
	// sequence per user across all its devices, in the order given. Seqs of one user become
	// visible in order (a reader never sees seq n+1 before n), so a cursor never skips one.
	Append(ctx context.Context, tenant string, events []mailbox.Event) ([]mailbox.Event, error)
	// Since returns up to limit events of the device (its own and mailbox.AllDevices ones)
	// with seq > after, ascending.
	Since(ctx context.Context, tenant string, user int64, device uint64, after int64, limit int) ([]mailbox.Event, error)
	// SaveCursor records what a device has synced.
	SaveCursor(ctx context.Context, tenant string, c mailbox.Cursor) error
	// Cursor reads what a device has synced; zero cursors for a device that never synced.
	Cursor(ctx context.Context, tenant string, user int64, device uint64) (mailbox.Cursor, error)
}

// DevicePusher is a Pusher that also names the devices a push did not reach, so the deliver
// worker can write MISSED_MESSAGE rows and notify, and can address one device.
type DevicePusher interface {
	Pusher
	// PushReach is Push of several pushes, in order, with the failed devices and offline
	// recipients of each named; outcomes are in push order. A connection gets the frames of
	// all the pushes it is a target of together.
	PushReach(ctx context.Context, tenant string, pushes ...delivery.Addressed) []delivery.Outcome
	// PushDevice writes p to one connected device of user (mailbox.AllDevices: every device)
	// and reports how many devices took it.
	PushDevice(ctx context.Context, tenant string, user int64, device uint64, p delivery.Push) int
}

// PushNotifier hands messages that did not reach a user's connection to the system push
// service (seed 003 §12.2). It must not block delivery for long.
type PushNotifier interface {
	Notify(ctx context.Context, tenant string, n delivery.Notification) error
}
