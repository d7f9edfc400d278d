// Package modify changes messages after they were sent (seed 000 §7): recall within a window,
// edit against an expected version, delete for everyone, and delete for oneself.
//
// A change of one message is one transaction on the month table that holds it, with a revision
// row. What every member must learn is then written once, as a `system` message in the topic
// that is pushed and synced like any other: O(1) writes however big the group, never a row per
// member (DESIGN §1). A request that fails after its change committed is answered 50301; its
// retry finds the change made and writes the same event again, which the send path's dedup
// turns into the one event.
package modify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

// Defaults and bounds.
const (
	DefaultRecallWindow = 2 * time.Minute
	// MaxDeleteRange bounds the seqs one DELETE_MESSAGES may hide.
	MaxDeleteRange = 100_000
)

// Config tunes the rules; zero fields take the defaults.
type Config struct {
	// RecallWindow is how long after sending its sender may recall a message.
	RecallWindow time.Duration
}

// Locator finds the month whose table holds a seq of a topic (history's route logic).
type Locator interface {
	Locate(ctx context.Context, tenant, topic string, seq int64) (month.Month, error)
}

// Publisher writes a topic event through the send path.
type Publisher interface {
	Publish(ctx context.Context, e send.Event) (send.Result, error)
}

// Deps are the ports and use cases a change goes through.
type Deps struct {
	Editor    ports.MessageEditor
	DeleteLog ports.DeleteLog
	Store     ports.MessageStore // the last seq of a topic, which bounds delete ranges
	Owners    ports.GroupOwners
	// HotCache, when set, drops its copy of a changed message; nil runs without a hot cache.
	HotCache ports.HotCache
	Locator  Locator
	Events   Publisher
	Resolver *conversation.Resolver
	// Media admits a media key an edit puts into a message, like a send's (issue 33); nil
	// admits every key of the right shape (tests).
	Media   ports.MediaAdmission
	Clock   ports.Clock
	Metrics ports.Metrics
	Log     *slog.Logger
}

// Service recalls, edits and deletes messages.
type Service struct {
	cfg Config
	d   Deps
}

// New returns the service.
func New(cfg Config, d Deps) *Service {
	if cfg.RecallWindow <= 0 {
		cfg.RecallWindow = DefaultRecallWindow
	}
	return &Service{cfg: cfg, d: d}
}

// Target is one message a user asks to change, from one of their devices.
type Target struct {
	Tenant string
	User   int64
	Device uint64
	Topic  string
	Seq    int64
}

// EditRequest is EDIT_MESSAGE: the new content and the version the client last saw.
type EditRequest struct {
	Target
	Content json.RawMessage
	Version int
}

// RangeRequest is DELETE_MESSAGES for oneself: seqs [Low, Hi) of Topic.
type RangeRequest struct {
	Tenant string
	User   int64
	Topic  string
	Low    int64
	Hi     int64
}

// decision turns the locked message into its next state, or refuses; message.ErrUnchanged
// means the change is already there (a retry).
type decision func(current message.Message, now time.Time) (message.Message, error)

// Recall lets the sender withdraw a message within the recall window: status recalled, content
// cleared. Group owner or admin recall is not offered yet.
func (s *Service) Recall(ctx context.Context, t Target) (message.Message, error) {
	conv, err := s.authorize(ctx, t, message.ActionRecall)
	if err != nil {
		return message.Message{}, err
	}
	return s.change(ctx, t, conv, message.ActionRecall, func(cur message.Message, now time.Time) (message.Message, error) {
		if err := senderOnly(cur, t.User); err != nil {
			return message.Message{}, err
		}
		switch {
		case cur.Status == message.StatusRecalled:
			return message.Message{}, message.ErrUnchanged
		case cur.Status == message.StatusDeleted:
			return message.Message{}, message.ErrNotFound
		case now.Sub(cur.CreatedAt) > s.cfg.RecallWindow:
			return message.Message{}, apperr.New(apperr.Forbidden, "the recall window has passed")
		}
		next := cur
		next.Status, next.Content, next.Version = message.StatusRecalled, nil, cur.Version+1
		return next, nil
	})
}

// Edit replaces the content of a message if the client saw its current version; a stale version
// is a conflict. The type stays, and the new content passes the checks of a send.
func (s *Service) Edit(ctx context.Context, r EditRequest) (message.Message, error) {
	if r.Version < 1 {
		return message.Message{}, s.refused(string(message.ActionEdit), apperr.New(apperr.InvalidArgument, "version must be positive"))
	}
	conv, err := s.authorize(ctx, r.Target, message.ActionEdit)
	if err != nil {
		return message.Message{}, err
	}
	return s.change(ctx, r.Target, conv, message.ActionEdit, func(cur message.Message, now time.Time) (message.Message, error) {
		if err := senderOnly(cur, r.User); err != nil {
			return message.Message{}, err
		}
		switch {
		case cur.Status == message.StatusDeleted:
			return message.Message{}, message.ErrNotFound
		case cur.Status == message.StatusRecalled:
			return message.Message{}, apperr.New(apperr.Conflict, "the message was recalled")
		case cur.Version == r.Version+1 && !cur.EditedAt.IsZero() && message.SameJSON(cur.Content, r.Content):
			return message.Message{}, message.ErrUnchanged // this very edit committed before
		case cur.Version != r.Version:
			return message.Message{}, apperr.New(apperr.Conflict, fmt.Sprintf("the message is at version %d", cur.Version))
		}
		draft := message.Draft{
			ClientMsgID: cur.ClientMsgID, Type: cur.Type, Content: r.Content,
			Mentions: cur.Mentions, MentionAll: cur.MentionAll, ReplySeq: cur.ReplySeq,
			// A forwarded copy keeps the reference the server gave it, and gets no other.
			Forward: message.ForwardOf(cur.Content),
		}
		if err := draft.Validate(); err != nil {
			return message.Message{}, err
		}
		if err := s.admitMedia(ctx, r.Target, cur, draft); err != nil {
			return message.Message{}, err
		}
		next := cur
		next.Content, next.Version, next.EditedAt = r.Content, cur.Version+1, now
		return next, nil
	})
}

// admitMedia admits the key of an edited media message when the edit changes it.
func (s *Service) admitMedia(ctx context.Context, t Target, cur message.Message, edited message.Draft) error {
	key, media := edited.MediaKey()
	if !media || s.d.Media == nil {
		return nil
	}
	if old, _ := (message.Draft{Type: cur.Type, Content: cur.Content}).MediaKey(); old == key {
		return nil
	}
	return s.d.Media.AdmitMedia(ctx, t.Tenant, t.User, key, t.Topic)
}

// DeleteForAll deletes a message for every member: status deleted, content cleared. Its sender
// may, and in a group its owner; group admins are not offered yet.
func (s *Service) DeleteForAll(ctx context.Context, t Target) (message.Message, error) {
	conv, err := s.authorize(ctx, t, message.ActionDelete)
	if err != nil {
		return message.Message{}, err
	}
	owner, err := s.groupOwner(ctx, t.Tenant, conv)
	if err != nil {
		return message.Message{}, err
	}
	return s.change(ctx, t, conv, message.ActionDelete, func(cur message.Message, _ time.Time) (message.Message, error) {
		if cur.Type == systemType {
			return message.Message{}, apperr.New(apperr.Forbidden, "system messages cannot be changed")
		}
		if cur.From != t.User && owner != t.User {
			return message.Message{}, apperr.New(apperr.Forbidden, "only the sender or the group owner may delete a message for everyone")
		}
		if cur.Status == message.StatusDeleted {
			if cur.ClientMsgID == "" {
				// A tombstone closing an unused seq, never a message (DESIGN §4).
				return message.Message{}, message.ErrNotFound
			}
			return message.Message{}, message.ErrUnchanged
		}
		next := cur
		next.Status, next.Content, next.Version = message.StatusDeleted, nil, cur.Version+1
		return next, nil
	})
}

// DeleteForSelf hides seqs [Low, Hi) from the user in every later sync and history page, in
// every month (im_dellog); other members see no change. Hi past the topic's last message is
// cut there, so messages that do not exist yet are never hidden.
func (s *Service) DeleteForSelf(ctx context.Context, r RangeRequest) error {
	switch {
	case r.Low < 1 || r.Hi <= r.Low:
		return s.refused(deleteSelfLabel, apperr.New(apperr.InvalidArgument, "the range must be 1 ≤ low < hi"))
	case r.Hi-r.Low > MaxDeleteRange:
		return s.refused(deleteSelfLabel, apperr.New(apperr.InvalidArgument, "the range spans more than "+strconv.Itoa(MaxDeleteRange)+" seqs"))
	}
	if _, err := s.d.Resolver.ForRead(ctx, r.Tenant, r.User, conversation.Address{Topic: r.Topic}); err != nil {
		return s.storageError(deleteSelfLabel, err)
	}
	last, err := s.d.Store.MaxSeq(ctx, r.Tenant, r.Topic)
	if err != nil {
		return s.failed(deleteSelfLabel, apperr.Wrap(apperr.Busy, "message storage unavailable", fmt.Errorf("last seq of %s: %w", r.Topic, err)))
	}
	if r.Low > last {
		return s.refused(deleteSelfLabel, apperr.New(apperr.InvalidArgument, "no message at or after low"))
	}
	if err := s.d.DeleteLog.HideRange(ctx, r.Tenant, r.Topic, r.User, r.Low, min(r.Hi, last+1)); err != nil {
		return s.failed(deleteSelfLabel, apperr.Wrap(apperr.Busy, "message storage unavailable", err))
	}
	s.d.Metrics.Inc("message_modify_total", deleteSelfLabel, "ok")
	return nil
}

// systemType is the type of events; they record what happened and are not changed themselves.
const systemType = "system"

func senderOnly(cur message.Message, user int64) error {
	if cur.Type == systemType {
		return apperr.New(apperr.Forbidden, "system messages cannot be changed")
	}
	if cur.From != user {
		return apperr.New(apperr.Forbidden, "only the sender may change a message")
	}
	return nil
}

// groupOwner returns the owner of a group, 0 for a P2P pair, which has none.
func (s *Service) groupOwner(ctx context.Context, tenant string, conv social.Conversation) (int64, error) {
	if conv.Kind != social.KindGroup {
		return 0, nil
	}
	owner, err := s.d.Owners.GroupOwner(ctx, tenant, conv.GroupID)
	if errors.Is(err, social.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, s.failed(string(message.ActionDelete), apperr.Wrap(apperr.Busy, "group lookup failed", err))
	}
	return owner, nil
}

// authorize checks the seq and that the user is in the conversation; the message itself is
// checked under its row lock.
func (s *Service) authorize(ctx context.Context, t Target, action message.Action) (social.Conversation, error) {
	if t.Seq <= 0 {
		return social.Conversation{}, s.refused(string(action), apperr.New(apperr.InvalidArgument, "seq must be positive"))
	}
	conv, err := s.d.Resolver.ForRead(ctx, t.Tenant, t.User, conversation.Address{Topic: t.Topic})
	if err != nil {
		return social.Conversation{}, s.storageError(string(action), err)
	}
	return conv, nil
}

// change runs an authorized message change to the end: locate the month, decide and write
// under the row lock, drop the cached copy, publish the topic event.
func (s *Service) change(ctx context.Context, t Target, conv social.Conversation, action message.Action, decide decision) (message.Message, error) {
	m, err := s.d.Locator.Locate(ctx, t.Tenant, t.Topic, t.Seq)
	if err != nil {
		return message.Message{}, s.storageError(string(action), fmt.Errorf("locate %s seq %d: %w", t.Topic, t.Seq, err))
	}
	now := s.d.Clock.Now().UTC().Truncate(time.Millisecond)
	changed, err := s.d.Editor.Modify(ctx, t.Tenant, m, t.Topic, t.Seq, func(cur message.Message) (message.Revision, error) {
		next, err := decide(cur, now)
		if err != nil {
			return message.Revision{}, err
		}
		return message.Revision{Action: action, Editor: t.User, At: now, Message: next}, nil
	})
	if err != nil {
		return message.Message{}, s.storageError(string(action), fmt.Errorf("%s %s seq %d in %s: %w", action, t.Topic, t.Seq, m, err))
	}
	if err := s.invalidate(ctx, t); err != nil {
		return message.Message{}, s.failed(string(action), err)
	}
	if err := s.publish(ctx, t, conv, action, changed); err != nil {
		return message.Message{}, s.failed(string(action), err)
	}
	s.d.Metrics.Inc("message_modify_total", string(action), "ok")
	return changed, nil
}

// invalidate drops the hot cache's copy, which would otherwise show the old message for up to
// a day; failing it fails the request, so the client retries until it is gone.
func (s *Service) invalidate(ctx context.Context, t Target) error {
	if s.d.HotCache == nil {
		return nil
	}
	if err := s.d.HotCache.Invalidate(ctx, t.Tenant, t.Topic, t.Seq); err != nil {
		s.d.Log.WarnContext(ctx, "hot cache invalidation failed after a message change", "topic", t.Topic, "seq", t.Seq, "err", err)
		return apperr.Wrap(apperr.Busy, "the change is saved but not yet visible everywhere, retry", err)
	}
	return nil
}

// event is the content of a topic event: what happened to which message.
type event struct {
	Event   message.Action `json:"event"`
	Seq     int64          `json:"seq"`
	Version int            `json:"version,omitempty"`
}

// publish writes the topic event of a change. Its client_msg_id names the message and its new
// version, so the retry of a request writes the same event again and dedup keeps one.
func (s *Service) publish(ctx context.Context, t Target, conv social.Conversation, action message.Action, changed message.Message) error {
	e := event{Event: action, Seq: changed.Seq}
	clientMsgID := fmt.Sprintf("%s:%d", action, changed.Seq)
	if action != message.ActionDelete {
		e.Version = changed.Version
		clientMsgID += ":" + strconv.Itoa(changed.Version)
	}
	content, err := json.Marshal(e)
	if err != nil {
		return apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("encode %s event: %w", action, err))
	}
	_, err = s.d.Events.Publish(ctx, send.Event{
		Tenant: t.Tenant, Conversation: conv, Actor: t.User, ActorDevice: t.Device,
		ClientMsgID: clientMsgID, Content: content,
	})
	if err != nil {
		s.d.Log.WarnContext(ctx, "message changed but its event is not written yet", "topic", t.Topic, "seq", t.Seq, "action", action, "err", err)
		if apperr.CodeOf(err) == apperr.Busy {
			return err
		}
		return apperr.Wrap(apperr.Busy, "the change is saved but not yet announced, retry", err)
	}
	return nil
}

// deleteSelfLabel is the metric label of DeleteForSelf, which has no revision action.
const deleteSelfLabel = "delete_self"

// storageError keeps the contract code of a refusal and reports an error without one as a
// dependency failure the client may retry.
func (s *Service) storageError(label string, err error) error {
	switch apperr.CodeOf(err) {
	case apperr.Internal:
		return s.failed(label, apperr.Wrap(apperr.Busy, "message storage unavailable, retry", err))
	case apperr.Busy:
		return s.failed(label, err)
	}
	return s.refused(label, err)
}

// refused counts a request refused for a reason of its own (a contract code other than 50301).
func (s *Service) refused(label string, err error) error {
	s.d.Metrics.Inc("message_modify_total", label, "refused")
	return err
}

// failed counts a request that a dependency failed; the client may retry it.
func (s *Service) failed(label string, err error) error {
	s.d.Metrics.Inc("message_modify_total", label, "failed")
	return err
}
