package inbox

import (
	"context"
)

// DialogPage is one page of a user's conversation list, by list score ascending.
type DialogPage struct {
	Dialogs []Dialog
	// After is the score to continue from.
	After   int64
	HasMore bool
}

// Dialogs pages the user's conversation list from the Redis dialog ZSETs (seed 003 §11: the
// HTTP list and SYNC_INBOX share ZRANGEBYSCORE (after, +inf)) without touching the mailbox or
// any device cursor. A list Redis lost is rebuilt from MySQL first.
func (s *Service) Dialogs(ctx context.Context, tenant string, user, after int64, limit int) (DialogPage, error) {
	limit, err := clampLimit(limit)
	if err != nil {
		return DialogPage{}, err
	}
	if err := s.ensureBuilt(ctx, tenant, user); err != nil {
		return DialogPage{}, err
	}
	entries, more, err := s.changed(ctx, tenant, user, after, limit)
	if err != nil {
		return DialogPage{}, err
	}
	dialogs, err := s.describe(ctx, tenant, user, entries)
	if err != nil {
		return DialogPage{}, err
	}
	page := DialogPage{Dialogs: dialogs, After: after, HasMore: more}
	if n := len(dialogs); n > 0 {
		page.After = dialogs[n-1].Score
	}
	return page, nil
}
