// Package inbox is the first level of the two-level sync (seed 003 §13): SYNC_INBOX returns the
// conversations whose list score moved past the device's cursor and the mailbox events after
// its mailbox cursor. It also rebuilds a user's list from MySQL after Redis lost it (DESIGN §5)
// and keeps the per-user list settings (mute, pin).
package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// Page size limits of SYNC_INBOX.
const (
	DefaultLimit = 100
	MaxLimit     = 200
)

// Deps are the ports the inbox reads and writes.
type Deps struct {
	Dialogs ports.DialogStore
	Reads   ports.ReadStore
	Mailbox ports.Mailbox
	Clock   ports.Clock
	Metrics ports.Metrics
	Log     *slog.Logger
}

// Service serves SYNC_INBOX, list rebuilds and list settings.
type Service struct{ d Deps }

// New returns the inbox service.
func New(d Deps) *Service { return &Service{d: d} }

// SyncRequest is one SYNC_INBOX: the cursors of the device's previous SYNC_INBOX_FINISH.
type SyncRequest struct {
	Tenant      string
	User        int64
	Device      uint64
	MailboxSeq  int64
	DialogScore int64
	Limit       int // dialogs and events each; 0 = DefaultLimit
}

// Dialog is one conversation of a sync page.
type Dialog struct {
	ConversationID int64
	Topic          string
	Score          int64 // list score: last message time, Unix ms
	LastSeq        int64
	ReadSeq        int64
	Unread         int64
	Muted          bool
	Pinned         bool
	Preview        dialog.Preview // zero when none is stored
}

// SyncResult is one page of changes and the cursors to continue from.
type SyncResult struct {
	Dialogs     []Dialog
	Events      []mailbox.Event
	MailboxSeq  int64
	DialogScore int64
	HasMore     bool
}

// Sync returns the dialogs with a score above DialogScore and the device's mailbox events
// after MailboxSeq, at most Limit of each, and stores the device's new cursors. A user whose
// list Redis lost is rebuilt from MySQL first.
func (s *Service) Sync(ctx context.Context, r SyncRequest) (SyncResult, error) {
	limit, err := clampLimit(r.Limit)
	if err != nil {
		return SyncResult{}, err
	}
	if r.MailboxSeq < 0 || r.DialogScore < 0 {
		return SyncResult{}, apperr.New(apperr.InvalidArgument, "mailbox_seq and dialog_score must not be negative")
	}
	if err := s.ensureBuilt(ctx, r.Tenant, r.User); err != nil {
		return SyncResult{}, err
	}
	entries, moreDialogs, err := s.changed(ctx, r.Tenant, r.User, r.DialogScore, limit)
	if err != nil {
		return SyncResult{}, err
	}
	dialogs, err := s.describe(ctx, r.Tenant, r.User, entries)
	if err != nil {
		return SyncResult{}, err
	}
	events, err := s.d.Mailbox.Since(ctx, r.Tenant, r.User, r.Device, r.MailboxSeq, limit+1)
	if err != nil {
		return SyncResult{}, apperr.Wrap(apperr.Busy, "mailbox unavailable", err)
	}
	moreEvents := len(events) > limit
	if moreEvents {
		events = events[:limit]
	}
	res := SyncResult{
		Dialogs: dialogs, Events: events, MailboxSeq: r.MailboxSeq, DialogScore: r.DialogScore,
		HasMore: moreDialogs || moreEvents,
	}
	if n := len(events); n > 0 {
		res.MailboxSeq = events[n-1].Seq
	}
	if n := len(dialogs); n > 0 {
		res.DialogScore = dialogs[n-1].Score
	}
	cursor := mailbox.Cursor{User: r.User, Device: r.Device, MailboxSeq: res.MailboxSeq, DialogScore: res.DialogScore}
	if err := s.d.Mailbox.SaveCursor(ctx, r.Tenant, cursor); err != nil {
		// The client holds its cursors; the stored copy only tells operators how far it got.
		s.d.Log.WarnContext(ctx, "saving sync cursor failed", "tenant", r.Tenant, "user_id", r.User, "device_id", r.Device, "err", err)
	}
	s.d.Metrics.Inc("inbox_sync_total")
	return res, nil
}

func clampLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultLimit, nil
	case limit < 0 || limit > MaxLimit:
		return 0, apperr.New(apperr.InvalidArgument, fmt.Sprintf("limit must be 1-%d", MaxLimit))
	}
	return limit, nil
}

// ensureBuilt rebuilds the user's list from MySQL when Redis has no marker for it: after a
// loss, or before the user's first sync. The merge keeps whatever the deliver worker wrote
// since, so a first sync of a new user changes nothing it already counted.
func (s *Service) ensureBuilt(ctx context.Context, tenant string, user int64) error {
	built, err := s.d.Dialogs.Built(ctx, tenant, user)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "conversation list unavailable", err)
	}
	if built {
		return nil
	}
	if _, err := s.rebuild(ctx, tenant, user, false); err != nil {
		return err
	}
	s.d.Metrics.Inc("inbox_rebuild_total", "sync")
	return nil
}

// Rebuild replaces the user's list with one computed from MySQL (admin, DESIGN §5) and returns
// how many conversations it holds.
func (s *Service) Rebuild(ctx context.Context, tenant string, user int64) (int, error) {
	if user <= 0 {
		return 0, apperr.New(apperr.InvalidArgument, "user id must be positive")
	}
	n, err := s.rebuild(ctx, tenant, user, true)
	if err != nil {
		return 0, err
	}
	s.d.Metrics.Inc("inbox_rebuild_total", "admin")
	return n, nil
}

func (s *Service) rebuild(ctx context.Context, tenant string, user int64, replace bool) (int, error) {
	states, err := s.d.Reads.AllStates(ctx, tenant, user)
	if err != nil {
		return 0, apperr.Wrap(apperr.Busy, "conversation state unavailable", err)
	}
	if err := s.d.Dialogs.Rebuild(ctx, tenant, user, states, replace); err != nil {
		return 0, apperr.Wrap(apperr.Busy, "conversation list unavailable", err)
	}
	s.d.Log.InfoContext(ctx, "conversation list rebuilt", "tenant", tenant, "user_id", user, "conversations", len(states), "replace", replace)
	return len(states), nil
}

// changed pages the list by score. The next page starts above the last score returned, so a
// page never ends inside a group of equal scores: it stops before the group, or holds the
// whole group when the group alone fills it.
func (s *Service) changed(ctx context.Context, tenant string, user, after int64, limit int) ([]dialog.Entry, bool, error) {
	got, err := s.d.Dialogs.Changed(ctx, tenant, user, after, limit+1)
	if err != nil {
		return nil, false, apperr.Wrap(apperr.Busy, "conversation list unavailable", err)
	}
	if len(got) <= limit {
		return got, false, nil
	}
	last := got[limit-1].Score
	if got[limit].Score != last {
		return got[:limit], true, nil
	}
	end := limit - 1
	for end >= 0 && got[end].Score == last {
		end--
	}
	if end >= 0 {
		return got[:end+1], true, nil
	}
	for n := 2 * limit; ; n *= 2 {
		group, err := s.d.Dialogs.Changed(ctx, tenant, user, after, n)
		if err != nil {
			return nil, false, apperr.Wrap(apperr.Busy, "conversation list unavailable", err)
		}
		for i, e := range group {
			if e.Score != last {
				return group[:i], true, nil
			}
		}
		if len(group) < n {
			return group, false, nil
		}
	}
}

// describe adds the MySQL side of each dialog: topic, last seq and the user's read position.
func (s *Service) describe(ctx context.Context, tenant string, user int64, entries []dialog.Entry) ([]Dialog, error) {
	if len(entries) == 0 {
		return []Dialog{}, nil
	}
	ids := make([]int64, len(entries))
	for i, e := range entries {
		ids[i] = e.ConversationID
	}
	states, err := s.d.Reads.States(ctx, tenant, user, ids)
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "conversation state unavailable", err)
	}
	byID := make(map[int64]dialog.State, len(states))
	for _, st := range states {
		byID[st.ConversationID] = st
	}
	out := make([]Dialog, len(entries))
	for i, e := range entries {
		st := byID[e.ConversationID]
		d := Dialog{
			ConversationID: e.ConversationID, Topic: st.Topic, Score: e.Score,
			LastSeq: max(st.LastSeq, e.Preview.Seq), ReadSeq: st.ReadSeq,
			Muted: e.Muted, Pinned: e.Pinned, Preview: e.Preview,
		}
		// Unread messages all follow the watermark MySQL keeps. A Redis count above that
		// missed a READ (Redis rolled back past it) or counted a message older than the
		// watermark that was delivered after it; either way the watermark is the truth.
		d.Unread = min(e.Unread, max(0, d.LastSeq-d.ReadSeq))
		if d.Topic == "" {
			d.Topic = e.Preview.Topic
		}
		out[i] = d
	}
	return out, nil
}

// SetMuted mutes or unmutes a conversation for the user: MySQL first (the truth a rebuild
// reads), then the list store the deliver worker consults.
func (s *Service) SetMuted(ctx context.Context, tenant string, user, conversationID int64, muted bool) error {
	if user <= 0 || conversationID <= 0 {
		return apperr.New(apperr.InvalidArgument, "user and conversation ids must be positive")
	}
	err := s.d.Reads.SetMuted(ctx, tenant, user, conversationID, muted)
	if errors.Is(err, social.ErrNotFound) {
		return apperr.New(apperr.NotFound, "not a member of this conversation")
	}
	if err != nil {
		return apperr.Wrap(apperr.Busy, "conversation state unavailable", err)
	}
	if err := s.d.Dialogs.SetMuted(ctx, tenant, user, conversationID, muted); err != nil {
		return apperr.Wrap(apperr.Busy, "conversation list unavailable", err)
	}
	return nil
}

// SetPinned pins or unpins a conversation in the user's list. Pins live in Redis only: the
// schema has no column for them, so a Redis loss unpins.
func (s *Service) SetPinned(ctx context.Context, tenant string, user, conversationID int64, pinned bool) error {
	if user <= 0 || conversationID <= 0 {
		return apperr.New(apperr.InvalidArgument, "user and conversation ids must be positive")
	}
	states, err := s.d.Reads.States(ctx, tenant, user, []int64{conversationID})
	if err != nil {
		return apperr.Wrap(apperr.Busy, "conversation state unavailable", err)
	}
	if len(states) == 0 {
		return apperr.New(apperr.NotFound, "not a member of this conversation")
	}
	var at int64
	if pinned {
		at = s.d.Clock.Now().UnixMilli()
	}
	if err := s.d.Dialogs.SetPinned(ctx, tenant, user, conversationID, at); err != nil {
		return apperr.Wrap(apperr.Busy, "conversation list unavailable", err)
	}
	return nil
}
