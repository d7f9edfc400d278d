package memory

import (
	"context"

	"github.com/imdhq/imd/ports"
)

var _ ports.DialogRemover = (*DialogStore)(nil)

// RemoveDialog drops the conversation from every list of the user; the preview stays.
func (s *DialogStore) RemoveDialog(_ context.Context, name string, user, conversationID int64) error {
	return s.onUser(name, user, func(l *lists) {
		delete(l.unread, conversationID)
		delete(l.read, conversationID)
		delete(l.counts, conversationID)
		delete(l.muted, conversationID)
		delete(l.pinned, conversationID)
	})
}
