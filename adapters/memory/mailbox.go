package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/ports"
)

// Mailbox is the in-memory ports.Mailbox: one seq per user across devices, like the MySQL one.
type Mailbox struct {
	mu      sync.Mutex
	events  map[string]map[int64][]mailbox.Event // tenant → user → events in seq order
	cursors map[string]map[[2]uint64]mailbox.Cursor
}

var _ ports.Mailbox = (*Mailbox)(nil)

// NewMailbox returns an empty mailbox.
func NewMailbox() *Mailbox {
	return &Mailbox{events: make(map[string]map[int64][]mailbox.Event), cursors: make(map[string]map[[2]uint64]mailbox.Cursor)}
}

// Append stores the events with each user's next seqs.
func (b *Mailbox) Append(_ context.Context, tenant string, events []mailbox.Event) ([]mailbox.Event, error) {
	for _, e := range events {
		switch {
		case e.ID <= 0 || e.User <= 0:
			return nil, fmt.Errorf("mailbox event needs an id and a user, got %d and %d", e.ID, e.User)
		case e.Type <= 0:
			return nil, fmt.Errorf("mailbox event %d has no type", e.ID)
		case len(e.Payload) > mailbox.MaxPayload:
			return nil, fmt.Errorf("mailbox event %d: payload of %d bytes exceeds %d", e.ID, len(e.Payload), mailbox.MaxPayload)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	users, ok := b.events[tenant]
	if !ok {
		users = make(map[int64][]mailbox.Event)
		b.events[tenant] = users
	}
	out := slices.Clone(events)
	for i := range out {
		e := &out[i]
		e.Seq = int64(len(users[e.User]) + 1)
		e.Payload = slices.Clone(e.Payload)
		users[e.User] = append(users[e.User], *e)
	}
	return out, nil
}

// Since returns the device's and the all-devices events after a seq.
func (b *Mailbox) Since(_ context.Context, tenant string, user int64, device uint64, after int64, limit int) ([]mailbox.Event, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []mailbox.Event
	for _, e := range b.events[tenant][user] {
		if len(out) >= limit {
			break
		}
		if e.Seq > after && (e.Device == mailbox.AllDevices || e.Device == device) {
			e.Payload = slices.Clone(e.Payload)
			out = append(out, e)
		}
	}
	return out, nil
}

var errHeadDevice = errors.New("device 0 has no sync cursor")

// SaveCursor records the device's cursor.
func (b *Mailbox) SaveCursor(_ context.Context, tenant string, c mailbox.Cursor) error {
	if c.Device == 0 {
		return fmt.Errorf("save sync cursor of %d: %w", c.User, errHeadDevice)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cursors[tenant] == nil {
		b.cursors[tenant] = make(map[[2]uint64]mailbox.Cursor)
	}
	b.cursors[tenant][[2]uint64{uint64(c.User), c.Device}] = c
	return nil
}

// Cursor reads the device's cursor; zero for a device that never synced.
func (b *Mailbox) Cursor(_ context.Context, tenant string, user int64, device uint64) (mailbox.Cursor, error) {
	if device == 0 {
		return mailbox.Cursor{}, fmt.Errorf("sync cursor of %d: %w", user, errHeadDevice)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.cursors[tenant][[2]uint64{uint64(user), device}]; ok {
		return c, nil
	}
	return mailbox.Cursor{User: user, Device: device}, nil
}
