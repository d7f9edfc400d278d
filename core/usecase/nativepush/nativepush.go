// Package nativepush sends APNs and FCM alerts for messages no device of the user took live
// (docs/DESIGN.md issue-32 "Native push", seed 003 §12: mailbox plus an optional system push).
// It is a ports.PushNotifier: the deliver fallback decides who is unreached, muted or sent a
// NotPush kind; Notify hands the users on to the next notifier (the JSON webhook, unchanged)
// and queues one alert per registered token, sent off the deliver path by a few senders.
package nativepush

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/pushtoken"
	"github.com/imdhq/imd/ports"
)

// Config tunes the senders.
type Config struct {
	Queue       int           // alerts waiting to be sent; default 10,000
	Senders     int           // concurrent sends; default 4
	Attempts    int           // tries per alert before its dead letter; default 4
	Backoff     time.Duration // wait before the second try, doubled after each; default 500ms
	MaxBackoff  time.Duration // default 30s
	SendTimeout time.Duration // per try; default 10s
	// HideContent names the tenants whose alerts carry a title only, never message text.
	HideContent map[string]bool
}

func (c Config) withDefaults() Config {
	c.Queue = orDefault(c.Queue, 10_000)
	c.Senders = orDefault(c.Senders, 4)
	c.Attempts = orDefault(c.Attempts, 4)
	c.Backoff = orDefault(c.Backoff, 500*time.Millisecond)
	c.MaxBackoff = orDefault(c.MaxBackoff, 30*time.Second)
	c.SendTimeout = orDefault(c.SendTimeout, 10*time.Second)
	return c
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// Deps are the ports the service uses.
type Deps struct {
	Tokens ports.PushTokens
	// Dialogs gives the badge: the sum of the user's unread counts.
	Dialogs ports.DialogStore
	// Providers by platform; a platform without one has its tokens skipped.
	Providers map[pushtoken.Platform]ports.PushProvider
	// Next gets every notification first (the JSON webhook or a no-op).
	Next ports.PushNotifier
	// FlushNext flushes Next's own queue (the JSON webhook's) at Close, after the alerts'
	// queue, so a stop loses neither (seed 003 §18); nil when Next queues nothing.
	FlushNext func(ctx context.Context) error
	Metrics   ports.Metrics
	Log       *slog.Logger
	// Sleep waits between tries; nil: a timer that ctx ends.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Service is the native push notifier.
type Service struct {
	cfg Config
	d   Deps

	queue  chan job
	ctx    context.Context // ends the senders' waits at Close
	cancel context.CancelFunc
	mu     sync.RWMutex // guards closed against Notify sending on a closed queue
	closed bool
	wg     sync.WaitGroup
}

var _ ports.PushNotifier = (*Service)(nil)

type job struct {
	tenant string
	n      delivery.Notification
}

// New starts the senders; Close stops them.
func New(cfg Config, d Deps) *Service {
	cfg = cfg.withDefaults()
	if d.Sleep == nil {
		d.Sleep = sleep
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{cfg: cfg, d: d, queue: make(chan job, cfg.Queue), ctx: ctx, cancel: cancel}
	for range cfg.Senders {
		s.wg.Add(1)
		go s.send()
	}
	return s
}

// ErrQueueFull: the alert queue is full or closed and the notification got no native alert.
var ErrQueueFull = errors.New("native push queue full")

// Notify hands n to Next, then queues it for the native alerts without waiting on a
// provider: the deliver worker calls it on its own path (DESIGN issue-32 "Native push").
func (s *Service) Notify(ctx context.Context, tenant string, n delivery.Notification) error {
	nextErr := s.d.Next.Notify(ctx, tenant, n)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errors.Join(nextErr, ErrQueueFull)
	}
	select {
	case s.queue <- job{tenant: tenant, n: n}:
		return nextErr
	default:
		s.d.Metrics.Inc("push_send_total", "none", "dropped")
		return errors.Join(nextErr, ErrQueueFull)
	}
}

func (s *Service) send() {
	defer s.wg.Done()
	for j := range s.queue {
		s.alert(s.ctx, j.tenant, j.n)
	}
}

// alert sends one alert per token of the notification's users.
func (s *Service) alert(ctx context.Context, tenant string, n delivery.Notification) {
	tokens, err := s.d.Tokens.TokensOf(ctx, tenant, n.Users)
	if err != nil {
		s.d.Metrics.Inc("push_send_total", "none", "failed")
		s.d.Log.WarnContext(ctx, "native push: tokens not read", "tenant", tenant, "msg_id", n.Preview.MsgID, "err", err)
		return
	}
	badges := make(map[int64]int)
	for _, t := range tokens {
		p, ok := s.d.Providers[t.Platform]
		if !ok {
			continue
		}
		badge, ok := badges[t.User]
		if !ok {
			badge = s.badge(ctx, tenant, t.User)
			badges[t.User] = badge
		}
		s.deliver(ctx, tenant, p, s.alertOf(tenant, t, n, badge))
	}
}

// badge is the user's unread total over every dialog (docs/DESIGN.md issue-32 part 1
// "Badge"); 0 when the lists cannot be read (an alert without a count beats none).
func (s *Service) badge(ctx context.Context, tenant string, user int64) int {
	sum, err := s.d.Dialogs.UnreadTotal(ctx, tenant, user)
	if err != nil {
		s.d.Log.DebugContext(ctx, "native push: badge not read", "tenant", tenant, "user", user, "err", err)
		return 0
	}
	return int(min(sum, 1<<31-1))
}

// alertOf builds t's alert: a title always, the preview text unless the tenant hides content.
func (s *Service) alertOf(tenant string, t pushtoken.Token, n delivery.Notification, badge int) pushtoken.Alert {
	p := n.Preview
	a := pushtoken.Alert{Token: t, Title: "New message", Badge: badge, CollapseID: pushtoken.CollapseID(p.ConversationID),
		Conversation: p.ConversationID, MsgID: p.MsgID}
	if !s.cfg.HideContent[tenant] {
		a.Body = p.Text
		if a.Body == "" {
			a.Body = "[" + p.Type + "]"
		}
	}
	return a
}

// deliver tries a until it is sent, its token is invalid (removed), an answer is final or
// the tries run out (a dead letter), waiting Backoff, doubled each time, between retries.
func (s *Service) deliver(ctx context.Context, tenant string, p ports.PushProvider, a pushtoken.Alert) {
	provider := string(a.Token.Platform)
	wait := s.cfg.Backoff
	var err error
	attempt := 0
	for attempt < s.cfg.Attempts {
		attempt++
		err = s.try(ctx, p, a)
		switch {
		case err == nil:
			s.d.Metrics.Inc("push_send_total", provider, "ok")
			return
		case errors.Is(err, pushtoken.ErrInvalidToken):
			s.d.Metrics.Inc("push_send_total", provider, "invalid")
			if derr := s.d.Tokens.DeleteTokenValue(ctx, tenant, a.Token.Platform, a.Token.Token); derr != nil {
				s.d.Log.WarnContext(ctx, "native push: invalid token not removed", "tenant", tenant, "user", a.Token.User, "err", derr)
			}
			return
		case !errors.Is(err, pushtoken.ErrRetryable) || attempt == s.cfg.Attempts:
		default:
			s.d.Metrics.Inc("push_send_total", provider, "retry")
			if s.d.Sleep(ctx, wait) != nil {
				return
			}
			wait = min(2*wait, s.cfg.MaxBackoff)
			continue
		}
		break
	}
	d := pushtoken.DeadLetter{Provider: a.Token.Platform, User: a.Token.User, DeviceID: a.Token.DeviceID, MsgID: a.MsgID,
		Attempts: attempt, LastError: err.Error(), CreatedAt: time.Now()}
	if derr := s.d.Tokens.AddDeadLetter(ctx, tenant, d); derr != nil {
		s.d.Log.WarnContext(ctx, "native push: dead letter not written", "tenant", tenant, "provider", provider, "err", derr)
	}
	// Counted once the letter is readable, so the alert and the console agree.
	s.d.Metrics.Inc("push_send_total", provider, "dead")
}

func (s *Service) try(ctx context.Context, p ports.PushProvider, a pushtoken.Alert) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SendTimeout)
	defer cancel()
	if err := p.Send(ctx, a); err != nil {
		return fmt.Errorf("send to %s: %w", a.Token.Platform, err)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops taking notifications and waits for the queued ones until ctx ends, then cuts
// the senders' waits short; then it flushes Next's queue (FlushNext), and returns both errors.
func (s *Service) Close(ctx context.Context) error {
	err := s.closeQueue(ctx)
	if s.d.FlushNext != nil {
		err = errors.Join(err, s.d.FlushNext(ctx))
	}
	return err
}

// closeQueue stops the alerts' queue and waits for its senders until ctx ends.
func (s *Service) closeQueue(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.cancel()
		return fmt.Errorf("native push: %d notifications not sent: %w", len(s.queue), ctx.Err())
	}
}
