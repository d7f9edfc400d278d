package ports

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
)

// DialogStore is the Redis side of the conversation lists (seed 003 §11): per user an unread
// and a read ZSET (score = last message time in ms), an unread-count HASH, a muted SET and a
// pinned ZSET, and per conversation a preview. Redis is the truth for counts and previews
// while it lives; after a loss the lists are rebuilt from MySQL (ReadStore.States).
type DialogStore interface {
	// Apply updates every recipient's list for each message, in order: the sender's dialog
	// (every dialog of a Silent update) is re-scored where it is, a muted dialog moves to the
	// read ZSET, any other dialog moves to the unread ZSET with its count +1. Scores never go
	// down. Each batch acts at most once per message, atomically with its mark; the
	// preview moves forward by seq only. Results: one per update and batch, in that order; a
	// result's Muted may leave out the update's sender, whose mute decides no alert: it does
	// for a lone update, and a store that applies a run of updates at once may still list a
	// sender who sent only some of them (the Redis store, adapters/redis/dialogs.go).
	Apply(ctx context.Context, tenant string, us ...dialog.Update) ([]dialog.Applied, error)
	// AppliedSeq is the seq of the conversation's preview: the newest message applied to its
	// lists (or the last one MySQL knew at a rebuild); 0 when there is none.
	AppliedSeq(ctx context.Context, tenant string, conversationID int64) (int64, error)
	// MarkRead clears the unread count and moves the dialog to the read ZSET, keeping its score.
	MarkRead(ctx context.Context, tenant string, user, conversationID int64) error
	// Changed returns up to limit dialogs of the user with a score above after, ascending by
	// score (both ZSETs merged; ties by conversation id).
	Changed(ctx context.Context, tenant string, user, after int64, limit int) ([]dialog.Entry, error)
	// UnreadTotal is the sum of the user's unread counts over every dialog, read at once (the
	// native push badge, docs/DESIGN.md issue-32 part 1 "Badge"); 0 for a user without lists.
	UnreadTotal(ctx context.Context, tenant string, user int64) (int64, error)
	// Built reports whether the user's list was built (or rebuilt) since Redis last lost it.
	Built(ctx context.Context, tenant string, user int64) (bool, error)
	// Rebuild writes the user's list from MySQL state and marks it built. replace=false merges:
	// counts and previews already in Redis win, scores only go up. replace=true drops the
	// user's lists, counts and muted set first (pins stay: MySQL has none).
	Rebuild(ctx context.Context, tenant string, user int64, states []dialog.State, replace bool) error
	// SetMuted adds the conversation to or removes it from the user's muted SET.
	SetMuted(ctx context.Context, tenant string, user, conversationID int64, muted bool) error
	// SetPinned pins the conversation at pinnedAt (Unix ms, for ordering pins); 0 unpins.
	SetPinned(ctx context.Context, tenant string, user, conversationID, pinnedAt int64) error
}

// ReadStore is the MySQL side of read state and conversation lists: t_conversation_members
// (read watermark, mute) joined with t_conversations (last message).
type ReadStore interface {
	// Advance moves the user's watermark to (seq, msgID) when seq is past the stored one and
	// returns the stored watermark (Topic unset) and whether it moved. A user without a member
	// row fails with social.ErrNotFound.
	Advance(ctx context.Context, tenant string, user, conversationID, seq, msgID int64) (w dialog.Watermark, advanced bool, err error)
	// States returns the user's member rows among conversationIDs, in no particular order;
	// conversations the user is not a member of are left out.
	States(ctx context.Context, tenant string, user int64, conversationIDs []int64) ([]dialog.State, error)
	// AllStates returns every conversation of the user that has a message, for a rebuild.
	AllStates(ctx context.Context, tenant string, user int64) ([]dialog.State, error)
	// SetMuted sets the user's mute flag of a conversation; social.ErrNotFound without a member row.
	SetMuted(ctx context.Context, tenant string, user, conversationID int64, muted bool) error
}

// MessageFinder finds a message by msg_id in one month table (READ by msg_id, seed 003 §14).
type MessageFinder interface {
	// FindByID fails with message.ErrNotFound when the month holds no such message and with
	// shard.ErrMonthMissing when the month has no registered table.
	FindByID(ctx context.Context, tenant string, m month.Month, msgID int64) (message.Message, error)
}

// DialogRemover takes a conversation off a user's lists when the user leaves it, so SYNC_INBOX
// and the conversation list stop showing it; rebuilds from MySQL leave it off already.
type DialogRemover interface {
	// RemoveDialog drops the conversation from the user's unread and read ZSETs, unread-count
	// HASH, muted SET and pinned ZSET at once; removing an absent dialog is no error. The
	// conversation's preview stays: it is shared by the remaining members.
	RemoveDialog(ctx context.Context, tenant string, user, conversationID int64) error
}

// ListGaps is the per-tenant record of the seqs deliver consumers went past without their jobs
// (dialog.Gap), shared by every node, which the list repair works through (seed 003 §20 item
// 13, issue 33). It lives beside the lists it repairs: a loss that takes the lists takes it
// too, and the lists are then rebuilt from MySQL anyway.
type ListGaps interface {
	// Note records gaps noted at at; a gap recorded already keeps its first time.
	Note(ctx context.Context, tenant string, at time.Time, gaps ...dialog.Gap) error
	// Due returns up to limit gaps noted at or before notedBy, oldest first (ties in no
	// particular order), with their time.
	Due(ctx context.Context, tenant string, notedBy time.Time, limit int) ([]dialog.Gap, error)
	// Close removes gaps (matched by topic, conversation and range); absent ones are no error.
	Close(ctx context.Context, tenant string, gaps ...dialog.Gap) error
}
