package memory

import (
	"context"
	"slices"
	"sync"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/ports"
)

// Notifier is a system push service that keeps what it was asked to send.
type Notifier struct {
	mu    sync.Mutex
	notes []delivery.Notification
}

var _ ports.PushNotifier = (*Notifier)(nil)

// NewNotifier returns a notifier that has sent nothing.
func NewNotifier() *Notifier { return &Notifier{} }

// Notify implements ports.PushNotifier.
func (n *Notifier) Notify(_ context.Context, _ string, note delivery.Notification) error {
	n.mu.Lock()
	n.notes = append(n.notes, note)
	n.mu.Unlock()
	return nil
}

// Users are the users of each notification sent, in order.
func (n *Notifier) Users() [][]int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([][]int64, len(n.notes))
	for i, note := range n.notes {
		out[i] = slices.Clone(note.Users)
	}
	return out
}
