package ports

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/msgref"
)

// Favorites keeps users' saved messages by topic+seq (seed 000 §8: 收藏 across months).
type Favorites interface {
	// AddFavorite saves (user, topic, seq); saving it again keeps the first and returns it.
	AddFavorite(ctx context.Context, tenant string, f msgref.Favorite) (msgref.Favorite, error)
	// RemoveFavorite reports whether a favorite was removed.
	RemoveFavorite(ctx context.Context, tenant string, user int64, topic string, seq int64) (bool, error)
	// Favorites pages a user's favorites newest first, ids below before (0: from the newest).
	Favorites(ctx context.Context, tenant string, user, before int64, limit int) ([]msgref.Favorite, error)
}

// GroupFiles is the index of groups' file messages (seed 000 §8: 群文件引用), written after
// the message committed.
type GroupFiles interface {
	// AddFiles records entries; an entry already recorded for (topic, seq) is kept.
	AddFiles(ctx context.Context, tenant string, files []msgref.File) error
	// RemoveFile drops the entry of (topic, seq), e.g. after a recall; none is no error.
	RemoveFile(ctx context.Context, tenant, topic string, seq int64) error
	// RemoveFileRange drops the entries of seqs [lo, hi] of topic (a purged month).
	RemoveFileRange(ctx context.Context, tenant, topic string, lo, hi int64) error
	// Files pages a topic's entries by seq descending, below before (0: from the newest).
	Files(ctx context.Context, tenant, topic string, before int64, limit int) ([]msgref.File, error)
}

// References finds the stored references into a seq range of a topic — favorites, reports and
// file index entries — so archiving can prove every one of them still resolves.
type References interface {
	// Referenced returns the distinct seqs in [lo, hi] of topic that something references,
	// ascending.
	Referenced(ctx context.Context, tenant, topic string, lo, hi int64) ([]int64, error)
}

// MediaRefs records which conversations reference each media object key (issue 33), so a
// download is authorized against the conversations a user may read rather than the key alone.
type MediaRefs interface {
	// AddMediaRef records that a message of topic references key; recording it again is a
	// no-op.
	AddMediaRef(ctx context.Context, tenant, key, topic string) error
	// MediaTopics lists the topics referencing key, ascending, at most limit.
	MediaTopics(ctx context.Context, tenant, key string, limit int) ([]string, error)
}

// MediaAdmission lets a media key into a conversation (issue 33): the key must be one the
// sender may read, and once admitted the conversation's readers may read it too. The send and
// edit paths call it before a message carrying the key is stored.
type MediaAdmission interface {
	AdmitMedia(ctx context.Context, tenant string, user int64, key, topic string) error
}

// Reactions keeps users' emoji reactions on messages by topic+seq (issue 31), beside the
// month tables so that a reaction on a message of a sealed or archived month works and a lost
// Redis loses none (DESIGN §3.1).
type Reactions interface {
	// AddReaction records r unless it is there already, checking lim against the message's
	// other reactions atomically; it returns what it did and the time of the stored reaction
	// (r.At when added now, the first time when it was there).
	AddReaction(ctx context.Context, tenant string, r msgref.Reaction, lim msgref.ReactionLimits) (msgref.ReactionOutcome, time.Time, error)
	// RemoveReaction removes r.User's r.Emoji from the message: ReactionChanged when there was
	// one, ReactionUnchanged when not.
	RemoveReaction(ctx context.Context, tenant string, r msgref.Reaction) (msgref.ReactionOutcome, error)
	// ReactionSummaries returns, in one read, the summary of each of seqs of topic that has
	// reactions: emojis in the order they were first used, Mine set where viewer reacted.
	ReactionSummaries(ctx context.Context, tenant, topic string, seqs []int64, viewer int64) (map[int64][]msgref.ReactionCount, error)
	// Reactors lists the reactions on one message, oldest first, at most limit.
	Reactors(ctx context.Context, tenant, topic string, seq int64, limit int) ([]msgref.Reaction, error)
}

// Pins keeps each conversation's pinned messages by topic+seq (issue 31), beside the month
// tables like Reactions.
type Pins interface {
	// AddPin pins p unless the message is pinned already, while the topic holds fewer than max;
	// it returns the stored pin (the first one when pinned before) and whether it was added now.
	// A full topic is msgref.ErrPinsFull.
	AddPin(ctx context.Context, tenant string, p msgref.Pin, max int) (msgref.Pin, bool, error)
	// RemovePin reports whether the message was pinned.
	RemovePin(ctx context.Context, tenant, topic string, seq int64) (bool, error)
	// Pins lists a topic's pins, newest first.
	Pins(ctx context.Context, tenant, topic string) ([]msgref.Pin, error)
}
