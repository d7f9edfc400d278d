// Package read is READ_MESSAGE (seed 003 §14, PROTOCOL cmd 8): a member marks a conversation
// read up to a message. The watermark in MySQL never moves back; the unread count in Redis is
// cleared; the user's other devices learn the new watermark through a deliver job.
package read

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

// Deps are the ports and services READ uses.
type Deps struct {
	Resolver *conversation.Resolver
	History  *history.Service // locates a message by topic and seq
	Finder   ports.MessageFinder
	IDs      ports.IDGenerator // the time inside a msg_id picks the first months to look in
	Shards   ports.ShardStore  // the catalog: the later months a msg_id may have been written to
	Reads    ports.ReadStore
	Dialogs  ports.DialogStore
	Queue    ports.DeliverQueue
	// Receipts hears of each watermark that moved, for the peer's read receipt (issue 31,
	// receipts.Service); nil sends none.
	Receipts Receipts
	Log      *slog.Logger
}

// Receipts is told of the watermarks that moved forward.
type Receipts interface {
	Read(ctx context.Context, tenant string, user int64, w dialog.Watermark)
}

// Service marks conversations read.
type Service struct{ d Deps }

// New returns the READ service.
func New(d Deps) *Service { return &Service{d: d} }

// Request is one READ_MESSAGE in any of its forms: {topic, seq}, {conversation_id, msg_id} or
// {conversation_id, last_msg_id} (peer_id, which 003 clients send, is not used).
type Request struct {
	Tenant string
	User   int64
	Device uint64 // the reading device; the others get the watermark

	Topic          string
	Seq            int64
	ConversationID int64
	MsgID          int64
	LastMsgID      int64
}

// Read stores the watermark and returns it as stored, which is the requested message or a
// later one already read: it never moves back.
func (s *Service) Read(ctx context.Context, r Request) (dialog.Watermark, error) {
	conv, target, err := s.locate(ctx, r)
	if err != nil {
		return dialog.Watermark{}, err
	}
	w, advanced, err := s.d.Reads.Advance(ctx, r.Tenant, r.User, conv.ID, target.Seq, target.MsgID)
	if errors.Is(err, social.ErrNotFound) {
		return dialog.Watermark{}, apperr.New(apperr.Forbidden, "not a member of this conversation")
	}
	if err != nil {
		return dialog.Watermark{}, apperr.Wrap(apperr.Busy, "read state unavailable", err)
	}
	w.Topic, w.ConversationID = conv.Topic, conv.ID
	if err := s.d.Dialogs.MarkRead(ctx, r.Tenant, r.User, conv.ID); err != nil {
		return dialog.Watermark{}, apperr.Wrap(apperr.Busy, "conversation list unavailable", err)
	}
	if advanced {
		s.notifyOtherDevices(ctx, r, w)
		if s.d.Receipts != nil {
			s.d.Receipts.Read(ctx, r.Tenant, r.User, w)
		}
	}
	return w, nil
}

// locate resolves the conversation, checks membership, and finds the message the request
// names. Membership is checked before the message is looked up, so a non-member learns
// nothing about the conversation's messages.
func (s *Service) locate(ctx context.Context, r Request) (social.Conversation, message.Message, error) {
	if r.Topic != "" && r.Seq > 0 {
		conv, err := s.d.Resolver.ForRead(ctx, r.Tenant, r.User, conversation.Address{Topic: r.Topic})
		if err != nil {
			return social.Conversation{}, message.Message{}, err
		}
		m, err := s.d.History.Get(ctx, r.Tenant, r.User, conv.Topic, r.Seq)
		return conv, m, err
	}
	id := r.MsgID
	if id <= 0 {
		id = r.LastMsgID
	}
	if r.ConversationID <= 0 || id <= 0 {
		return social.Conversation{}, message.Message{}, apperr.New(apperr.InvalidArgument,
			"read needs topic and seq, or conversation_id and msg_id (or last_msg_id)")
	}
	conv, err := s.d.Resolver.ForRead(ctx, r.Tenant, r.User, conversation.Address{ConversationID: r.ConversationID})
	if err != nil {
		return social.Conversation{}, message.Message{}, err
	}
	m, err := s.byID(ctx, r.Tenant, id)
	if err != nil {
		return social.Conversation{}, message.Message{}, err
	}
	if m.Topic != conv.Topic {
		return social.Conversation{}, message.Message{}, apperr.New(apperr.InvalidArgument, "the message belongs to another conversation")
	}
	return conv, m, nil
}

// byID finds a message by msg_id. A message lives in the month its seq allocation chose (the
// active month then), which is not always its id's calendar month: one month after it when the
// client pre-generated the id, one before while next month's table was missing, and any later
// month of the catalog when an operator advanced the month early (POST /shards/advance). The
// calendar month, the next and the one before are tried first, one primary-key lookup each;
// only then does the catalog name the later months to try.
func (s *Service) byID(ctx context.Context, tenant string, id int64) (message.Message, error) {
	base := month.Of(s.d.IDs.TimeOf(id))
	msg, err := s.findIn(ctx, tenant, id, []month.Month{base, base.Next(), base.Prev()})
	if !errors.Is(err, message.ErrNotFound) {
		return msg, err
	}
	catalog, err := s.d.Shards.Catalog(ctx, tenant)
	if err != nil {
		return message.Message{}, apperr.Wrap(apperr.Busy, "month catalog unavailable", fmt.Errorf("find msg_id %d: %w", id, err))
	}
	var later []month.Month
	for _, info := range catalog {
		if info.Month > base.Next() {
			later = append(later, info.Month)
		}
	}
	slices.Sort(later)
	return s.findIn(ctx, tenant, id, later)
}

// findIn looks the id up in each month in turn, skipping months without a table;
// message.ErrNotFound when none holds it.
func (s *Service) findIn(ctx context.Context, tenant string, id int64, months []month.Month) (message.Message, error) {
	for _, m := range months {
		if !m.Valid() {
			continue
		}
		msg, err := s.d.Finder.FindByID(ctx, tenant, m, id)
		switch {
		case err == nil:
			return msg, nil
		case errors.Is(err, message.ErrNotFound), errors.Is(err, shard.ErrMonthMissing):
			continue
		default:
			return message.Message{}, apperr.Wrap(apperr.Busy, "message storage unavailable", fmt.Errorf("find msg_id %d in %s: %w", id, m, err))
		}
	}
	return message.Message{}, message.ErrNotFound
}

// watermarkData is the READ_MESSAGE data of PROTOCOL cmd 8, pushed as is to other devices.
type watermarkData struct {
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	MsgID          int64  `json:"msg_id"`
}

// notifyOtherDevices enqueues the watermark for the user's other online devices (seed 003
// §14: only this user, not this device, no system push, no mailbox). The watermark is stored
// already, so a failure here costs the other devices a live update only; they see read_seq on
// their next SYNC_INBOX.
func (s *Service) notifyOtherDevices(ctx context.Context, r Request, w dialog.Watermark) {
	data, err := json.Marshal(watermarkData{Topic: w.Topic, ConversationID: w.ConversationID, Seq: w.Seq, MsgID: w.MsgID})
	if err == nil {
		err = s.d.Queue.Push(ctx, delivery.Job{
			Tenant: r.Tenant, Kind: delivery.KindRead, MsgID: w.MsgID, Topic: w.Topic, ConversationID: w.ConversationID,
			From: r.User, ExcludeDevice: r.Device, NotPush: true, NotMailbox: true,
			Recipients: []int64{r.User}, Event: data,
		})
	}
	if err != nil {
		s.d.Log.WarnContext(ctx, "read watermark not sent to other devices", "tenant", r.Tenant, "user_id", r.User,
			"topic", w.Topic, "seq", w.Seq, "err", err)
	}
}
