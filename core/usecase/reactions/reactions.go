// Package reactions keeps what members put on a message without changing it (issue 31): emoji
// reactions and pins. Both live beside the month tables by topic+seq (DESIGN §3.1), so a
// message of a sealed or archived month takes them like any other, and each change reaches the
// members as one `system` message in the topic, written through the send path like a recall
// (DESIGN §1.6): one row per change however big the group, pushed to the members online on
// any node and synced by the others.
package reactions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

// Defaults and bounds.
const (
	DefaultPerMessage = 50 // distinct emojis on one message
	DefaultPerUser    = 20 // emojis of one user on one message
	// MaxReactors bounds the reactions one LIST answers.
	MaxReactors = 200
	// retryWindow is how long after a change its request may be retried and still write the
	// change's event, in case the first attempt stored the change but failed to announce it.
	retryWindow = 2 * time.Minute
)

// Config tunes the limits; zero fields take the defaults.
type Config struct {
	PerMessage int
	PerUser    int
	MaxPins    int
}

// Reader reads one message as a user may (history's Get): the membership check, and 40401 for
// a seq no month or archive holds.
type Reader interface {
	Get(ctx context.Context, tenant string, user int64, topic string, seq int64) (message.Message, error)
}

// Publisher writes a topic event through the send path.
type Publisher interface {
	Publish(ctx context.Context, e send.Event) (send.Result, error)
}

// Deps are the ports and use cases reactions and pins go through.
type Deps struct {
	Reactions ports.Reactions
	Pins      ports.Pins
	// Groups answers who may pin in a group: its owner and admins.
	Groups   ports.Groups
	Messages Reader
	Resolver *conversation.Resolver
	Events   Publisher
	Clock    ports.Clock
	Metrics  ports.Metrics
	Log      *slog.Logger
}

// Service adds, removes and lists reactions and pins.
type Service struct {
	cfg Config
	d   Deps
}

// New returns the service.
func New(cfg Config, d Deps) *Service {
	if cfg.PerMessage <= 0 {
		cfg.PerMessage = DefaultPerMessage
	}
	if cfg.PerUser <= 0 {
		cfg.PerUser = DefaultPerUser
	}
	if cfg.MaxPins <= 0 {
		cfg.MaxPins = msgref.MaxPins
	}
	return &Service{cfg: cfg, d: d}
}

// Target is one message a user acts on, from one of their devices.
type Target struct {
	Tenant string
	User   int64
	Device uint64
	Topic  string
	Seq    int64
}

// Summary is a message's reactions as one user sees them.
type Summary struct {
	Topic     string
	Seq       int64
	Reactions []msgref.ReactionCount
}

// React adds (remove false) or removes the user's emoji on a message of any month. Doing it
// twice changes nothing the second time. The answer is the message's summary afterwards.
func (s *Service) React(ctx context.Context, t Target, emoji string, remove bool) (Summary, error) {
	action := "add"
	if remove {
		action = "remove"
	}
	sum, err := s.react(ctx, t, emoji, remove, action)
	s.count("message_reaction_total", action, err)
	return sum, err
}

func (s *Service) react(ctx context.Context, t Target, emoji string, remove bool, action string) (Summary, error) {
	if err := msgref.ValidateEmoji(emoji); err != nil {
		return Summary{}, err
	}
	conv, m, err := s.target(ctx, t, s.d.Resolver.ForEvent)
	if err != nil {
		return Summary{}, err
	}
	r := msgref.Reaction{Topic: t.Topic, Seq: t.Seq, Emoji: emoji, User: t.User, At: s.d.Clock.Now()}
	var outcome msgref.ReactionOutcome
	if remove {
		outcome, err = s.d.Reactions.RemoveReaction(ctx, t.Tenant, r)
	} else {
		if err := reactable(m); err != nil {
			return Summary{}, err
		}
		outcome, r.At, err = s.d.Reactions.AddReaction(ctx, t.Tenant, r, msgref.ReactionLimits{PerMessage: s.cfg.PerMessage, PerUser: s.cfg.PerUser})
	}
	if err != nil {
		return Summary{}, apperr.Wrap(apperr.Busy, "reactions unavailable, retry", err)
	}
	switch outcome {
	case msgref.ReactionEmojiLimit:
		return Summary{}, apperr.New(apperr.Forbidden, fmt.Sprintf("a message takes at most %d different emojis", s.cfg.PerMessage))
	case msgref.ReactionUserLimit:
		return Summary{}, apperr.New(apperr.Forbidden, fmt.Sprintf("one user puts at most %d emojis on a message", s.cfg.PerUser))
	}
	sums, err := s.d.Reactions.ReactionSummaries(ctx, t.Tenant, t.Topic, []int64{t.Seq}, t.User)
	if err != nil {
		return Summary{}, apperr.Wrap(apperr.Busy, "reactions unavailable, retry", err)
	}
	sum := Summary{Topic: t.Topic, Seq: t.Seq, Reactions: sums[t.Seq]}
	if outcome == msgref.ReactionUnchanged && (remove || s.d.Clock.Now().Sub(r.At) > retryWindow) {
		return sum, nil
	}
	count := 0
	for _, c := range sum.Reactions {
		if c.Emoji == emoji {
			count = c.Count
		}
	}
	e := event{Event: "reaction", Seq: t.Seq, Emoji: emoji, Action: action, Count: &count}
	return sum, s.publish(ctx, t, conv, e, r.At, emoji)
}

// reactable refuses what takes no reactions: events, and messages recalled or deleted.
func reactable(m message.Message) error {
	switch {
	case m.Type == "system":
		return apperr.New(apperr.Forbidden, "system messages take no reactions or pins")
	case m.Status != message.StatusNormal:
		return message.ErrNotFound
	}
	return nil
}

// Reactors lists the reactions on one message, oldest first, at most limit (0: MaxReactors).
func (s *Service) Reactors(ctx context.Context, t Target, limit int) ([]msgref.Reaction, error) {
	switch {
	case limit == 0:
		limit = MaxReactors
	case limit < 0 || limit > MaxReactors:
		return nil, apperr.New(apperr.InvalidArgument, fmt.Sprintf("limit must be 1-%d", MaxReactors))
	}
	if _, _, err := s.target(ctx, t, s.d.Resolver.ForRead); err != nil {
		return nil, err
	}
	rs, err := s.d.Reactions.Reactors(ctx, t.Tenant, t.Topic, t.Seq, limit)
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "reactions unavailable, retry", err)
	}
	return rs, nil
}

// Summaries returns the reaction summaries of a page of one topic's messages as viewer sees
// them, in one read whatever the page's size (issue 31). It never fails a page: without the
// store the page goes out without summaries, which the next read fills in.
func (s *Service) Summaries(ctx context.Context, tenant string, viewer int64, msgs []message.Message) map[int64][]msgref.ReactionCount {
	if len(msgs) == 0 {
		return nil
	}
	seqs := make([]int64, 0, len(msgs))
	for _, m := range msgs {
		if m.Type != "system" && m.Status == message.StatusNormal {
			seqs = append(seqs, m.Seq)
		}
	}
	if len(seqs) == 0 {
		return nil
	}
	sums, err := s.d.Reactions.ReactionSummaries(ctx, tenant, msgs[0].Topic, seqs, viewer)
	if err != nil {
		s.d.Log.WarnContext(ctx, "a page goes out without its reaction summaries", "topic", msgs[0].Topic, "err", err)
		return nil
	}
	return sums
}

// resolve checks a user's rights in a conversation: ForRead to list, ForEvent to change, which
// needs the right to send (issue 31: a muted member or a blocked peer may not react or pin).
type resolve func(ctx context.Context, tenant string, user int64, a conversation.Address) (social.Conversation, error)

// target checks the seq, the user's rights in the conversation and that the message exists in
// some month, live, sealed or archived (history finds it wherever it is).
func (s *Service) target(ctx context.Context, t Target, may resolve) (social.Conversation, message.Message, error) {
	if t.Seq <= 0 {
		return social.Conversation{}, message.Message{}, apperr.New(apperr.InvalidArgument, "seq must be positive")
	}
	conv, err := may(ctx, t.Tenant, t.User, conversation.Address{Topic: t.Topic})
	if err != nil {
		return social.Conversation{}, message.Message{}, err
	}
	m, err := s.d.Messages.Get(ctx, t.Tenant, t.User, t.Topic, t.Seq)
	if err != nil {
		return social.Conversation{}, message.Message{}, err
	}
	if m.Status == message.StatusDeleted && m.ClientMsgID == "" {
		// A tombstone closing an unused seq, never a message (DESIGN §4).
		return social.Conversation{}, message.Message{}, message.ErrNotFound
	}
	return conv, m, nil
}

// event is the content of a reaction or pin topic event. Count is the emoji's count after the
// change, so a client updates its copy without asking.
type event struct {
	Event  string `json:"event"`
	Seq    int64  `json:"seq"`
	Emoji  string `json:"emoji,omitempty"`
	Action string `json:"action,omitempty"`
	Count  *int   `json:"count,omitempty"`
}

// publish writes the topic event of a change. Its client_msg_id is derived from the change and
// its time, so the retry of a request writes the same event again and dedup keeps one, while a
// later change of the same kind is an event of its own.
func (s *Service) publish(ctx context.Context, t Target, conv social.Conversation, e event, at time.Time, detail string) error {
	content, err := json.Marshal(e)
	if err != nil {
		return apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("encode %s event: %w", e.Event, err))
	}
	h := sha256.Sum256([]byte(e.Action + "\x00" + detail + "\x00" + strconv.FormatInt(at.UnixMilli(), 10)))
	_, err = s.d.Events.Publish(ctx, send.Event{
		Tenant: t.Tenant, Conversation: conv, Actor: t.User, ActorDevice: t.Device,
		ClientMsgID: fmt.Sprintf("%s:%d:%s", e.Event, t.Seq, hex.EncodeToString(h[:10])), Content: content,
	})
	if errors.Is(err, send.ErrClientMsgIDReused) {
		// The change's event is written already, with the counts of its time: a retry after
		// others reacted carries other counts, and the first announcement stands (issue 31).
		return nil
	}
	if err != nil {
		s.d.Log.WarnContext(ctx, "change stored but its event is not written yet", "topic", t.Topic, "seq", t.Seq, "event", e.Event, "err", err)
		if apperr.CodeOf(err) == apperr.Busy {
			return err
		}
		return apperr.Wrap(apperr.Busy, "the change is saved but not yet announced, retry", err)
	}
	return nil
}

// count records a request's outcome: ok, or refused (a code of its own) or failed (50301, the
// client may retry).
func (s *Service) count(name, action string, err error) {
	status := "ok"
	switch apperr.CodeOf(err) {
	case apperr.OK:
	case apperr.Busy, apperr.Internal:
		status = "failed"
	default:
		status = "refused"
	}
	s.d.Metrics.Inc(name, action, status)
}
