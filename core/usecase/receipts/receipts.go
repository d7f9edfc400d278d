// Package receipts is what others see of a user's reading (issue 31, docs/DESIGN.md
// issue-31): in a P2P conversation the peer's online devices are pushed RECEIPT when the user
// reads ("read up to seq") and when a device of the user acknowledges a MESSAGE ("delivered");
// in any conversation the sender of a message asks READ_STATE for "read by K of N", and for
// groups up to a configured size the readers, counted from the members' read watermarks — never
// a row per message per member. Pushes are live only, like TYPING_NOTICE: nothing is stored,
// queued or pushed to a phone (seed 003 §12). A user who hides receipts (SETTINGS) sends no
// read receipt and is counted by no READ_STATE.
package receipts

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

// Config sizes READ_STATE; zero fields take the defaults.
type Config struct {
	// GroupLimit is the largest group whose READ_STATE lists the readers; bigger groups get
	// the counts only. Default 200.
	GroupLimit int
}

func (c Config) withDefaults() Config {
	if c.GroupLimit <= 0 {
		c.GroupLimit = 200
	}
	return c
}

// Members lists a group topic's members (the membership cache).
type Members interface {
	Members(ctx context.Context, tenant, topic string) ([]int64, error)
}

// TokenHolders says, in memory, whether a user holds a native push token
// (core/usecase/nativepush.Holders).
type TokenHolders interface {
	Has(tenant string, user int64) bool
}

// Deps are what receipts use.
type Deps struct {
	Resolver *conversation.Resolver
	History  *history.Service // the message READ_STATE names: its sender, and 40401 if unknown
	Members  Members
	Receipts ports.ReadReceipts
	Settings ports.UserSettings
	Pusher   ports.DevicePusher
	// Holders keep the group PUSH_ACKs of the users holding a push token, on their delivered
	// watermark, which no receipt shows: the ack wait of native push reads it (DESIGN issue-32
	// "Native push"). nil (the ack wait off): a group ack costs nothing.
	Holders TokenHolders
	Metrics ports.Metrics
	Log     *slog.Logger
}

// Service pushes receipts and answers READ_STATE.
type Service struct {
	cfg Config
	d   Deps
}

// New returns the receipts service.
func New(cfg Config, d Deps) *Service { return &Service{cfg: cfg.withDefaults(), d: d} }

// Receipt is the data of the RECEIPT push (PROTOCOL.md §3): UserID read up to ReadSeq, or a
// device of UserID got message DeliveredSeq; exactly one of the two is set.
type Receipt struct {
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	UserID         int64  `json:"user_id"`
	ReadSeq        int64  `json:"read_seq,omitempty"`
	DeliveredSeq   int64  `json:"delivered_seq,omitempty"`
}

// Read follows a watermark of user that moved forward (READ_MESSAGE): in P2P the peer learns
// it unless user hides receipts. Groups push nothing: their members ask READ_STATE, so a read in
// a group of 10,000 costs no fan-out.
func (s *Service) Read(ctx context.Context, tenant string, user int64, w dialog.Watermark) {
	peer, ok := p2pPeer(w.Topic, user)
	if !ok {
		return
	}
	st, err := s.d.Settings.Settings(ctx, tenant, user)
	if err != nil {
		s.d.Log.WarnContext(ctx, "receipt setting unreadable; read receipt not sent", "tenant", tenant, "user_id", user, "err", err)
		return
	}
	if st.HideReceipts {
		return
	}
	s.push(ctx, tenant, peer, "read", Receipt{Topic: w.Topic, ConversationID: w.ConversationID, UserID: user, ReadSeq: w.Seq})
}

// Delivered follows a PUSH_ACK of a device of user for m: in P2P the sender learns m reached a
// device. Acks of the sender's own devices (they get its messages too) say nothing to anyone;
// acks of group messages are kept only for a token holder (Deps.Holders) and pushed to no one.
// hide_receipts does not stop it: it hides reading, not being online.
func (s *Service) Delivered(ctx context.Context, tenant string, user int64, m *message.Message) {
	if !s.Hears(tenant, user, m) {
		return
	}
	// Kept too, so a sender who was away learns it from READ_STATE (issue 31, DESIGN §13): a
	// lost write only leaves that message at ✓ until a later ack or read, so it is logged, not
	// retried.
	if err := s.d.Receipts.RaiseDelivered(ctx, tenant, m.ConversationID, user, m.Seq); err != nil {
		s.d.Log.WarnContext(ctx, "delivered mark not kept", "tenant", tenant, "user_id", user, "topic", m.Topic, "seq", m.Seq, "err", err)
	}
	if tells(user, m) {
		s.push(ctx, tenant, m.From, "delivered", Receipt{Topic: m.Topic, ConversationID: m.ConversationID, UserID: user, DeliveredSeq: m.Seq})
	}
}

// Hears reports whether Delivered does anything with a PUSH_ACK of user for m: one that tells,
// or any ack of another user's message by a token holder. The transports ask before handing
// the ack over, so the acks of a message to a group of 10,000 cost no task each but those of
// its token holders. In memory only: it is asked on the connection's reader.
func (s *Service) Hears(tenant string, user int64, m *message.Message) bool {
	return tells(user, m) || (m != nil && m.From != user && s.d.Holders != nil && s.d.Holders.Has(tenant, user))
}

// tells reports whether a PUSH_ACK of user for m makes a delivered receipt: a P2P message of
// the peer.
func tells(user int64, m *message.Message) bool {
	if m == nil || m.From == user {
		return false
	}
	_, ok := p2pPeer(m.Topic, user)
	return ok
}

// p2pPeer is the other user of a P2P topic of user.
func p2pPeer(name string, user int64) (int64, bool) {
	p, err := topic.Parse(name)
	if err != nil || p.Kind != topic.P2P {
		return 0, false
	}
	return p.Peer(user), true
}

// push hands r to the online devices of to, on any node: live only.
func (s *Service) push(ctx context.Context, tenant string, to int64, kind string, r Receipt) {
	data, err := json.Marshal(r)
	if err != nil {
		s.d.Log.ErrorContext(ctx, "receipt not encoded", "err", err)
		return
	}
	out := s.d.Pusher.PushReach(ctx, tenant, delivery.Addressed{
		Target: delivery.Target{Recipients: []int64{to}, NotMailbox: true, NotPush: true},
		Push:   delivery.Push{Kind: delivery.KindReceipt, Data: data},
	})
	s.d.Metrics.Add("receipts_pushed_total", float64(out[0].Delivered), kind)
}

// StateRequest is one READ_STATE: a message of a conversation.
type StateRequest struct {
	Tenant  string
	User    int64
	Address conversation.Address
	Seq     int64
}

// State is the answer of READ_STATE.
type State struct {
	Topic          string
	ConversationID int64
	Seq            int64
	Readers        dialog.Readers // Users listed only up to GroupLimit members
	// DeliveredSeq is, in P2P, how far the peer's devices got the conversation (0 in groups):
	// every message of the sender's up to it is delivered (✓✓).
	DeliveredSeq int64
}

// ReadState answers who read message seq: only its sender may ask (40301 for any other
// member, as for a non-member), an unknown seq is 40401. It costs two counts over the
// conversation's watermarks and, in groups up to GroupLimit, one page of ids.
func (s *Service) ReadState(ctx context.Context, r StateRequest) (State, error) {
	if r.Seq <= 0 {
		return State{}, apperr.New(apperr.InvalidArgument, "seq must be positive")
	}
	conv, err := s.d.Resolver.ForRead(ctx, r.Tenant, r.User, r.Address)
	if err != nil {
		return State{}, err
	}
	m, err := s.d.History.Get(ctx, r.Tenant, r.User, conv.Topic, r.Seq)
	if err != nil {
		return State{}, err
	}
	if m.From != r.User {
		return State{}, apperr.New(apperr.Forbidden, "only the sender of a message sees who read it")
	}
	limit, err := s.listLimit(ctx, r.Tenant, conv.Topic)
	if err != nil {
		return State{}, err
	}
	readers, err := s.d.Receipts.ReadBy(ctx, r.Tenant, conv.ID, r.Seq, r.User, limit)
	if err != nil {
		return State{}, apperr.Wrap(apperr.Busy, "read state unavailable", err)
	}
	st := State{Topic: conv.Topic, ConversationID: conv.ID, Seq: r.Seq, Readers: readers}
	if peer, ok := p2pPeer(conv.Topic, r.User); ok {
		if st.DeliveredSeq, err = s.d.Receipts.DeliveredTo(ctx, r.Tenant, conv.ID, peer); err != nil {
			return State{}, apperr.Wrap(apperr.Busy, "read state unavailable", err)
		}
	}
	s.d.Metrics.Inc("read_state_queries_total")
	return st, nil
}

// listLimit is how many readers a READ_STATE of the topic lists: the peer in P2P, every
// reader in a group up to GroupLimit members, none above.
func (s *Service) listLimit(ctx context.Context, tenant, name string) (int, error) {
	p, err := topic.Parse(name)
	if err != nil {
		return 0, apperr.Wrap(apperr.InvalidArgument, "bad topic", err)
	}
	if p.Kind == topic.P2P {
		return 1, nil
	}
	members, err := s.d.Members.Members(ctx, tenant, name)
	if err != nil {
		return 0, apperr.Wrap(apperr.Busy, "members unavailable", fmt.Errorf("read state of %s: %w", name, err))
	}
	if len(members) > s.cfg.GroupLimit {
		return 0, nil
	}
	return s.cfg.GroupLimit, nil
}
