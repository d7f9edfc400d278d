// Package push implements ports.PushNotifier: Noop, and Webhook, which posts each
// notification as JSON to an HTTP endpoint that talks to APNs/FCM (seed 003 §12.2, §22 step 12).
package push

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/ports"
)

// Noop drops every notification: the default when no push service is configured.
type Noop struct{}

var _ ports.PushNotifier = Noop{}

// Notify does nothing.
func (Noop) Notify(context.Context, string, delivery.Notification) error { return nil }

// ErrQueueFull: the webhook's queue is full and the notification was dropped.
var ErrQueueFull = errors.New("push webhook queue full")

// WebhookConfig configures the webhook.
type WebhookConfig struct {
	URL     string        // http or https
	Timeout time.Duration // per POST; default 2s
	Queue   int           // notifications waiting to be posted; default 10,000
	Senders int           // concurrent POSTs; default 4
}

// Webhook posts notifications from a bounded queue, so a slow push service never slows the
// deliver workers: Notify only enqueues, and drops when the queue is full. Posts that fail are
// counted and logged, not retried: the message is in the user's list and mailbox anyway.
type Webhook struct {
	cfg     WebhookConfig
	client  *http.Client
	metrics ports.Metrics
	log     *slog.Logger

	queue    chan notification
	stopOnce sync.Once
	mu       sync.RWMutex // guards closed against Notify sending on a closed queue
	closed   bool
	wg       sync.WaitGroup
}

var _ ports.PushNotifier = (*Webhook)(nil)

// notification is the JSON body of one POST.
type notification struct {
	Tenant         string  `json:"tenant"`
	Users          []int64 `json:"users"`
	Topic          string  `json:"topic"`
	ConversationID int64   `json:"conversation_id"`
	MsgID          int64   `json:"msg_id"`
	Seq            int64   `json:"seq"`
	From           int64   `json:"from"`
	Type           string  `json:"type"`
	Text           string  `json:"text,omitempty"`
	CreatedAt      int64   `json:"created_at"`
}

// NewWebhook checks the config and starts the senders; Close stops them.
func NewWebhook(cfg WebhookConfig, metrics ports.Metrics, log *slog.Logger) (*Webhook, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("push webhook: %q is not an http(s) URL", cfg.URL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 10_000
	}
	if cfg.Senders <= 0 {
		cfg.Senders = 4
	}
	w := &Webhook{
		cfg: cfg, client: &http.Client{Timeout: cfg.Timeout}, metrics: metrics, log: log,
		queue: make(chan notification, cfg.Queue),
	}
	for range cfg.Senders {
		w.wg.Add(1)
		go w.send()
	}
	return w, nil
}

// Notify queues n for posting; ErrQueueFull when the queue is full or closed.
func (w *Webhook) Notify(_ context.Context, tenant string, n delivery.Notification) error {
	p := n.Preview
	body := notification{
		Tenant: tenant, Users: n.Users, Topic: p.Topic, ConversationID: p.ConversationID, MsgID: p.MsgID,
		Seq: p.Seq, From: p.From, Type: p.Type, Text: p.Text, CreatedAt: p.CreatedAt,
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrQueueFull
	}
	select {
	case w.queue <- body:
		return nil
	default:
		w.metrics.Inc("push_notify_total", "dropped")
		return ErrQueueFull
	}
}

func (w *Webhook) send() {
	defer w.wg.Done()
	for n := range w.queue {
		if err := w.post(n); err != nil {
			w.metrics.Inc("push_notify_total", "failed")
			w.log.Warn("push webhook failed", "tenant", n.Tenant, "msg_id", n.MsgID, "users", len(n.Users), "err", err)
			continue
		}
		w.metrics.Inc("push_notify_total", "ok")
	}
}

func (w *Webhook) post(n notification) error {
	raw, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.URL, bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post: HTTP %d", resp.StatusCode)
	}
	return nil
}

// Close stops accepting notifications and waits until the queued ones are posted or ctx ends.
func (w *Webhook) Close(ctx context.Context) error {
	w.stopOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		close(w.queue)
		w.mu.Unlock()
	})
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("push webhook: %d notifications not posted: %w", len(w.queue), ctx.Err())
	}
}
