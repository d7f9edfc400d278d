package msgref

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/imdhq/imd/core/domain/apperr"
)

// MaxEmojiBytes bounds a reaction's emoji: the longest emoji ZWJ sequences (a kiss of two
// people with two skin tones) take 35 bytes of UTF-8, a custom :shortcode: a few more (issue 31).
const MaxEmojiBytes = 64

// Reaction is one user's emoji on a message; the message is named by topic+seq, so a reaction
// keeps working when its month is sealed, archived or restored (DESIGN §3.1).
type Reaction struct {
	Topic string
	Seq   int64
	Emoji string
	User  int64
	At    time.Time
}

// ReactionCount is one emoji of a message's reaction summary: how many reacted with it, and
// whether the user the summary is for is one of them.
type ReactionCount struct {
	Emoji string
	Count int
	Mine  bool
}

// ReactionLimits bound what one message carries: distinct emojis, and emojis of one user.
type ReactionLimits struct {
	PerMessage int
	PerUser    int
}

// ReactionOutcome is what adding or removing a reaction did.
type ReactionOutcome int

const (
	// ReactionChanged: the reaction was added or removed now.
	ReactionChanged ReactionOutcome = iota
	// ReactionUnchanged: it was already there (add) or already gone (remove).
	ReactionUnchanged
	// ReactionEmojiLimit: adding would exceed the message's distinct emojis.
	ReactionEmojiLimit
	// ReactionUserLimit: adding would exceed the user's emojis on the message.
	ReactionUserLimit
)

// ValidateEmoji rejects what is not one short token of printable text: empty, over
// MaxEmojiBytes, invalid UTF-8, or holding spaces or control characters (issue 31: 40001).
func ValidateEmoji(e string) error {
	switch {
	case e == "":
		return apperr.New(apperr.InvalidArgument, "emoji is required")
	case len(e) > MaxEmojiBytes:
		return apperr.New(apperr.InvalidArgument, fmt.Sprintf("emoji is longer than %d bytes", MaxEmojiBytes))
	case !utf8.ValidString(e):
		return apperr.New(apperr.InvalidArgument, "emoji is not valid UTF-8")
	case strings.IndexFunc(e, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return apperr.New(apperr.InvalidArgument, "emoji holds a space or a control character")
	}
	return nil
}

// Pin is a message pinned in its conversation, by whom and when.
type Pin struct {
	Topic string
	Seq   int64
	By    int64
	At    time.Time
}

// MaxPins bounds the pinned messages of one conversation, so its list is one short read.
const MaxPins = 50

// ErrPinsFull refuses a pin in a conversation that holds the most pins allowed.
var ErrPinsFull = apperr.New(apperr.Forbidden, "the conversation holds the most pinned messages allowed; unpin one first")

// Admit decides an add of r against the reactions a message has: ReactionUnchanged with the
// stored time when r is there already, a limit outcome when it may not be added, otherwise
// ReactionChanged with the time to store (r.At in whole milliseconds, what MySQL keeps). The
// stores call it under their lock, so both decide alike.
func Admit(have []Reaction, r Reaction, lim ReactionLimits) (ReactionOutcome, time.Time) {
	emojis := map[string]bool{}
	mine := 0
	for _, h := range have {
		if h.Emoji == r.Emoji && h.User == r.User {
			return ReactionUnchanged, h.At
		}
		emojis[h.Emoji] = true
		if h.User == r.User {
			mine++
		}
	}
	switch {
	case !emojis[r.Emoji] && len(emojis) >= lim.PerMessage:
		return ReactionEmojiLimit, time.Time{}
	case mine >= lim.PerUser:
		return ReactionUserLimit, time.Time{}
	}
	return ReactionChanged, r.At.UTC().Truncate(time.Millisecond)
}

// AdmitPin decides a pin of p against the pins its topic has: the stored pin when the message
// is pinned already, ErrPinsFull when the topic holds max, otherwise p to store (its time in
// whole milliseconds) and true.
func AdmitPin(have []Pin, p Pin, max int) (Pin, bool, error) {
	for _, h := range have {
		if h.Seq == p.Seq {
			return h, false, nil
		}
	}
	if len(have) >= max {
		return Pin{}, false, ErrPinsFull
	}
	p.At = p.At.UTC().Truncate(time.Millisecond)
	return p, true, nil
}
