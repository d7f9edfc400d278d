package inbox

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/ports"
)

// MailerDeps are the ports the mailer uses.
type MailerDeps struct {
	Mailbox ports.Mailbox
	Pusher  ports.DevicePusher
	IDs     ports.IDGenerator
	Clock   ports.Clock
	Log     *slog.Logger
}

// Mailer posts per-user control events: it stores them in the mailbox, which is how they
// reach every device eventually (SYNC_INBOX), then pushes each as an EVENT to the devices it
// addresses that are online now, which saves them the wait.
type Mailer struct{ d MailerDeps }

// NewMailer returns a mailer.
func NewMailer(d MailerDeps) *Mailer { return &Mailer{d: d} }

// Post stores and pushes events; ID and CreatedAt are filled in. It returns the stored events
// with their mailbox seqs. A push that reaches nobody is not an error.
func (m *Mailer) Post(ctx context.Context, tenant string, events []mailbox.Event) ([]mailbox.Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	now := m.d.Clock.Now().UTC()
	for i := range events {
		if len(events[i].Payload) > mailbox.MaxPayload {
			return nil, fmt.Errorf("mailbox event for user %d: payload of %d bytes exceeds %d", events[i].User, len(events[i].Payload), mailbox.MaxPayload)
		}
		id, err := m.d.IDs.NextID()
		if err != nil {
			return nil, fmt.Errorf("mailbox event id: %w", err)
		}
		events[i].ID, events[i].CreatedAt = id, now
	}
	stored, err := m.d.Mailbox.Append(ctx, tenant, events)
	if err != nil {
		return nil, fmt.Errorf("append %d mailbox events: %w", len(events), err)
	}
	for _, e := range stored {
		data, err := e.Data()
		if err != nil {
			m.d.Log.ErrorContext(ctx, "mailbox event not pushable", "tenant", tenant, "user_id", e.User, "err", err)
			continue
		}
		m.d.Pusher.PushDevice(ctx, tenant, e.User, e.Device, delivery.Push{Kind: delivery.KindEvent, Data: data})
	}
	return stored, nil
}
