package nativepush

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/pushtoken"
	"github.com/imdhq/imd/ports"
)

// provider records alerts and answers each token from a script (then nil).
type provider struct {
	mu      sync.Mutex
	sent    []pushtoken.Alert
	answers map[string][]error
}

func (p *provider) Send(_ context.Context, a pushtoken.Alert) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, a)
	if q := p.answers[a.Token.Token]; len(q) > 0 {
		p.answers[a.Token.Token] = q[1:]
		return q[0]
	}
	return nil
}

// badgeDialogs are user 1's lists: more dialogs than one page of them (1,500), each with seq
// unread messages but every third read and every fifth muted (counting nothing), so the badge
// is their exact total (docs/DESIGN.md issue-32 part 1 "Badge").
func badgeDialogs(t *testing.T) (ports.DialogStore, int) {
	t.Helper()
	var (
		states []dialog.State
		want   int
	)
	for conv := int64(1); conv <= 1_500; conv++ {
		s := dialog.State{ConversationID: conv, Topic: fmt.Sprintf("grp_%d", conv), LastSeq: conv%4 + 1, LastMsgAt: time.UnixMilli(conv * 1000),
			Muted: conv%5 == 0}
		if conv%3 == 0 {
			s.ReadSeq = s.LastSeq
		}
		want += int(s.Unread())
		states = append(states, s)
	}
	d := memory.NewDialogStore(time.Now)
	if err := d.Rebuild(context.Background(), "acme", 1, states, true); err != nil {
		t.Fatal(err)
	}
	return d, want
}

func TestService(t *testing.T) {
	retry := fmt.Errorf("HTTP 503: %w", pushtoken.ErrRetryable)
	tests := []struct {
		name        string
		hide        bool
		answers     map[string][]error
		wantSent    int
		wantBody    string
		wantMetrics map[[2]string]float64 // push_send_total{provider,result} → count
		wantTokens  int                   // left after the alert
		wantDead    int
	}{
		{name: "both sent", wantSent: 2, wantBody: "hi", wantMetrics: map[[2]string]float64{{"apns", "ok"}: 1, {"fcm", "ok"}: 1}, wantTokens: 3},
		{name: "hide content", hide: true, wantSent: 2, wantBody: "", wantMetrics: map[[2]string]float64{{"apns", "ok"}: 1, {"fcm", "ok"}: 1}, wantTokens: 3},
		{name: "invalid token removed", answers: map[string][]error{"apns-1": {fmt.Errorf("410: %w", pushtoken.ErrInvalidToken)}},
			wantSent: 2, wantBody: "hi", wantMetrics: map[[2]string]float64{{"apns", "invalid"}: 1, {"fcm", "ok"}: 1}, wantTokens: 2},
		{name: "retried then sent", answers: map[string][]error{"fcm-1": {retry, retry}},
			wantSent: 4, wantBody: "hi", wantMetrics: map[[2]string]float64{{"apns", "ok"}: 1, {"fcm", "retry"}: 2, {"fcm", "ok"}: 1}, wantTokens: 3},
		{name: "dead letter after the tries", answers: map[string][]error{"fcm-1": {retry, retry, retry}},
			wantSent: 4, wantBody: "hi", wantMetrics: map[[2]string]float64{{"apns", "ok"}: 1, {"fcm", "retry"}: 2, {"fcm", "dead"}: 1}, wantTokens: 3, wantDead: 1},
		{name: "final error not retried", answers: map[string][]error{"fcm-1": {fmt.Errorf("HTTP 400")}},
			wantSent: 2, wantBody: "hi", wantMetrics: map[[2]string]float64{{"apns", "ok"}: 1, {"fcm", "dead"}: 1}, wantTokens: 3, wantDead: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tokens := memory.NewPushTokens()
			for _, tok := range []pushtoken.Token{
				{User: 1, DeviceID: "phone", Platform: pushtoken.APNs, AppID: "com.example", Token: "apns-1"},
				{User: 1, DeviceID: "tablet", Platform: pushtoken.FCM, AppID: "proj", Token: "fcm-1"},
				{User: 9, DeviceID: "phone", Platform: pushtoken.APNs, AppID: "com.example", Token: "apns-9"},
			} {
				if err := tokens.PutToken(ctx, "acme", tok); err != nil {
					t.Fatal(err)
				}
			}
			p := &provider{answers: tc.answers}
			next := memory.NewNotifier()
			metrics := memory.NewMetrics()
			var waits []time.Duration
			dialogs, badge := badgeDialogs(t)
			s := New(Config{Senders: 1, Attempts: 3, Backoff: time.Second, HideContent: map[string]bool{"acme": tc.hide}}, Deps{
				Tokens: tokens, Dialogs: dialogs,
				Providers: map[pushtoken.Platform]ports.PushProvider{pushtoken.APNs: p, pushtoken.FCM: p},
				Next:      next, Metrics: metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
			})
			n := delivery.Notification{Users: []int64{1}, Preview: dialog.Preview{ConversationID: 42, MsgID: 7, Text: "hi", Type: "text"}}
			if err := s.Notify(ctx, "acme", n); err != nil {
				t.Fatalf("Notify: %v", err)
			}
			if err := s.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got := next.Users(); len(got) != 1 || !slices.Equal(got[0], []int64{1}) {
				t.Fatalf("next notifier got %v; want the notification", got)
			}
			if len(p.sent) != tc.wantSent {
				t.Fatalf("sent %d alerts; want %d", len(p.sent), tc.wantSent)
			}
			for _, a := range p.sent {
				if a.Badge != badge || a.CollapseID != "c42" || a.Body != tc.wantBody || a.Title == "" || a.Token.User != 1 {
					t.Fatalf("alert %+v: want badge %d, collapse c42, body %q", a, badge, tc.wantBody)
				}
			}
			for l, want := range tc.wantMetrics {
				if got := metrics.Count("push_send_total", l[0], l[1]); got != want {
					t.Errorf("push_send_total%v = %v; want %v", l, got, want)
				}
			}
			if left, _ := tokens.TokensOf(ctx, "acme", []int64{1, 9}); len(left) != tc.wantTokens {
				t.Errorf("%d tokens left; want %d", len(left), tc.wantTokens)
			}
			for i, w := range waits {
				if want := time.Second << i; w != want {
					t.Errorf("wait %d = %v; want %v (doubling)", i, w, want)
				}
			}
			for _, pl := range pushtoken.Platforms {
				dead, _ := tokens.DeadLetters(ctx, "acme", pl, 10)
				tc.wantDead -= len(dead)
			}
			if tc.wantDead != 0 {
				t.Errorf("dead letters off by %d", tc.wantDead)
			}
		})
	}
}

// blocked is a provider whose sends wait until the service cuts them short.
type blocked struct{}

func (blocked) Send(ctx context.Context, _ pushtoken.Alert) error { <-ctx.Done(); return ctx.Err() }

// TestCloseFlushesItsQueueThenNexts: at stop the alerts' queue is flushed first, then Next's
// (the JSON webhook's), and the errors of both come back.
func TestCloseFlushesItsQueueThenNexts(t *testing.T) {
	webhookLate := errors.New("push webhook: 3 notifications not posted")
	tests := []struct {
		name      string
		stuck     bool  // the alerts' senders are still sending when the stop's time is up
		flushNext bool  // Next has a queue of its own
		nextErr   error // what flushing it returns
		wantErrs  []error
	}{
		{name: "no queue behind", flushNext: false},
		{name: "both flushed", flushNext: true},
		{name: "next's error", flushNext: true, nextErr: webhookLate, wantErrs: []error{webhookLate}},
		{name: "both errors joined", stuck: true, flushNext: true, nextErr: webhookLate, wantErrs: []error{context.Canceled, webhookLate}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tokens := memory.NewPushTokens()
			if err := tokens.PutToken(ctx, "acme", pushtoken.Token{User: 1, DeviceID: "phone", Platform: pushtoken.APNs, AppID: "a", Token: "apns-1"}); err != nil {
				t.Fatal(err)
			}
			sent := &provider{}
			var apns ports.PushProvider = sent
			if tc.stuck {
				apns = blocked{}
			}
			var flushed []int // the alerts sent when Next was flushed
			d := Deps{
				Tokens: tokens, Dialogs: memory.NewDialogStore(time.Now),
				Providers: map[pushtoken.Platform]ports.PushProvider{pushtoken.APNs: apns},
				Next:      memory.NewNotifier(), Metrics: memory.NewMetrics(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			}
			if tc.flushNext {
				d.FlushNext = func(context.Context) error {
					sent.mu.Lock()
					defer sent.mu.Unlock()
					flushed = append(flushed, len(sent.sent))
					return tc.nextErr
				}
			}
			s := New(Config{Senders: 1}, d)
			if err := s.Notify(ctx, "acme", delivery.Notification{Users: []int64{1}, Preview: dialog.Preview{ConversationID: 42, MsgID: 7, Text: "hi"}}); err != nil {
				t.Fatalf("Notify: %v", err)
			}
			closeCtx := ctx
			if tc.stuck {
				var cancel context.CancelFunc
				closeCtx, cancel = context.WithCancel(ctx)
				cancel()
			}
			err := s.Close(closeCtx)
			if len(tc.wantErrs) == 0 && err != nil {
				t.Fatalf("Close: %v", err)
			}
			for _, want := range tc.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("Close: %v; want it to carry %v", err, want)
				}
			}
			switch {
			case !tc.flushNext && flushed != nil:
				t.Errorf("flushed a Next without a queue: %v", flushed)
			case tc.flushNext && len(flushed) != 1:
				t.Errorf("Next flushed %d times; want once", len(flushed))
			case tc.flushNext && !tc.stuck && flushed[0] != 1:
				t.Errorf("Next flushed with %d alerts sent; want after the queued alert was", flushed[0])
			}
		})
	}
}
