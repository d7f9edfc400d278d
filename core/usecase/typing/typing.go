// Package typing is TYPING (issue 31): a member says it started or stopped typing in a
// conversation, and the other members' online devices, on any node, get TYPING_NOTICE. Nothing
// is stored or queued: a notice lost to a full outbound queue or a node that died is gone, and
// a notice ends by itself after Expires unless renewed, so a client that vanished mid-word
// never leaves others watching "typing…". Requests are limited per device here, in memory:
// a device has one connection, on this node.
package typing

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/ports"
)

// Config bounds typing; zero fields take the defaults.
type Config struct {
	// GroupLimit is the largest group typing is pushed in; bigger groups refuse it (40301).
	// Default 200.
	GroupLimit int
	// Expires is how long a start lasts on the other devices unless renewed. Default 6s.
	Expires time.Duration
	// PerDevice requests per Window a device may send; more is 42901. Defaults 10 per 10s:
	// a start every few seconds while typing and a stop.
	PerDevice int
	Window    time.Duration
}

func (c Config) withDefaults() Config {
	if c.GroupLimit <= 0 {
		c.GroupLimit = 200
	}
	if c.Expires <= 0 {
		c.Expires = 6 * time.Second
	}
	if c.PerDevice <= 0 {
		c.PerDevice = 10
	}
	if c.Window <= 0 {
		c.Window = 10 * time.Second
	}
	return c
}

// Members lists a group topic's members (the membership cache).
type Members interface {
	Members(ctx context.Context, tenant, topic string) ([]int64, error)
}

// Deps are what typing uses.
type Deps struct {
	Resolver *conversation.Resolver
	Members  Members
	Pusher   ports.DevicePusher
	Clock    ports.Clock
	Metrics  ports.Metrics
	Log      *slog.Logger
}

// Request is one TYPING.
type Request struct {
	Tenant  string
	User    int64
	Device  uint64
	Address conversation.Address
	Typing  bool
}

type deviceKey struct {
	tenant string
	user   int64
	device uint64
}

// window counts one device's requests since start.
type window struct {
	start time.Time
	n     int
}

// maxTracked bounds the devices whose windows are kept; past it the ended windows are dropped.
const maxTracked = 100_000

// Service pushes typing notices.
type Service struct {
	cfg Config
	d   Deps

	mu      sync.Mutex
	windows map[deviceKey]*window
}

// New returns the typing service.
func New(cfg Config, d Deps) *Service {
	return &Service{cfg: cfg.withDefaults(), d: d, windows: make(map[deviceKey]*window)}
}

// Notice is the data of TYPING_NOTICE (PROTOCOL.md §3).
type Notice struct {
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	UserID         int64  `json:"user_id"`
	Typing         bool   `json:"typing"`
	ExpiresIn      int64  `json:"expires_in,omitempty"`
}

// Typing checks the limit and the member's rights and pushes the notice to the other members'
// online devices; it returns how long the notice lasts.
func (s *Service) Typing(ctx context.Context, r Request) (time.Duration, error) {
	if !s.allow(deviceKey{r.Tenant, r.User, r.Device}) {
		s.d.Metrics.Inc("typing_total", "limited")
		return 0, apperr.New(apperr.RateLimited, "typing too often, slow down")
	}
	conv, err := s.d.Resolver.ForEvent(ctx, r.Tenant, r.User, r.Address)
	if err != nil {
		return 0, err
	}
	others, err := s.others(ctx, r.Tenant, r.User, conv)
	if err != nil {
		return 0, err
	}
	n := Notice{Topic: conv.Topic, ConversationID: conv.ID, UserID: r.User, Typing: r.Typing}
	if r.Typing {
		n.ExpiresIn = s.cfg.Expires.Milliseconds()
	}
	data, err := json.Marshal(n)
	if err != nil {
		return 0, apperr.Wrap(apperr.Internal, "typing notice not encoded", err)
	}
	s.d.Metrics.Inc("typing_total", "accepted")
	out := s.d.Pusher.PushReach(ctx, r.Tenant, delivery.Addressed{
		Target: delivery.Target{Recipients: others, Sender: r.User, ExcludeDevice: r.Device, NotMailbox: true, NotPush: true},
		Push:   delivery.Push{Kind: delivery.KindTyping, Data: data},
	})
	s.d.Metrics.Add("typing_pushes_total", float64(out[0].Delivered))
	return s.cfg.Expires, nil
}

// others are the members of conv but user; a group above GroupLimit refuses typing.
func (s *Service) others(ctx context.Context, tenant string, user int64, conv social.Conversation) ([]int64, error) {
	p, err := topic.Parse(conv.Topic)
	if err != nil {
		return nil, apperr.Wrap(apperr.InvalidArgument, "bad topic", err)
	}
	if p.Kind == topic.P2P {
		return []int64{p.Peer(user)}, nil
	}
	members, err := s.d.Members.Members(ctx, tenant, conv.Topic)
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "members unavailable", fmt.Errorf("typing in %s: %w", conv.Topic, err))
	}
	if len(members) > s.cfg.GroupLimit {
		return nil, apperr.New(apperr.Forbidden, fmt.Sprintf("no typing notices in groups of more than %d members", s.cfg.GroupLimit))
	}
	others := make([]int64, 0, len(members))
	for _, m := range members {
		if m != user {
			others = append(others, m)
		}
	}
	return others, nil
}

// allow spends one request of the device's window: PerDevice per Window.
func (s *Service) allow(k deviceKey) bool {
	now := s.d.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.windows[k]
	if w == nil || now.Sub(w.start) >= s.cfg.Window {
		if w == nil && len(s.windows) >= maxTracked {
			s.forgetEnded(now)
		}
		s.windows[k] = &window{start: now, n: 1}
		return true
	}
	if w.n >= s.cfg.PerDevice {
		return false
	}
	w.n++
	return true
}

// forgetEnded drops the windows that ended; the caller holds mu.
func (s *Service) forgetEnded(now time.Time) {
	for k, w := range s.windows {
		if now.Sub(w.start) >= s.cfg.Window {
			delete(s.windows, k)
		}
	}
}
