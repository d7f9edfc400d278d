package memory

import (
	"context"

	"github.com/imdhq/imd/ports"
)

var _ ports.DialogRemover = (*DialogStore)(nil)

// RemoveDialog drops the conversation from every list of the user; the preview stays.
func (s *DialogStore) RemoveDialog(_ context.Context, name string, user, conversationID int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.of(name)
	if err != nil {
		return err
	}
	l := t.user(user)
	delete(l.unread, conversationID)
	delete(l.read, conversationID)
	delete(l.counts, conversationID)
	delete(l.muted, conversationID)
	delete(l.pinned, conversationID)
	return nil
}
