package push

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
)

func TestWebhookPostsJSON(t *testing.T) {
	var (
		mu   sync.Mutex
		got  []notification
		seen = make(chan struct{}, 10)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n notification
		if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&n) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
		if n.MsgID == 2 {
			w.WriteHeader(http.StatusInternalServerError)
		}
		seen <- struct{}{}
	}))
	defer srv.Close()
	metrics := memory.NewMetrics()
	w, err := NewWebhook(WebhookConfig{URL: srv.URL, Timeout: time.Second}, metrics, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 2; id++ {
		n := delivery.Notification{Users: []int64{7, 8}, Preview: dialog.Preview{Topic: "grp_1", ConversationID: 9, MsgID: id, Seq: id, Type: "text", Text: "hi", From: 3}}
		if err := w.Notify(context.Background(), "acme", n); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		select {
		case <-seen:
		case <-time.After(5 * time.Second):
			t.Fatal("webhook not called")
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Tenant != "acme" || len(got[0].Users) != 2 || got[0].Text != "hi" || got[0].ConversationID != 9 {
		t.Fatalf("posted %+v", got)
	}
	if metrics.Count("push_notify_total", "ok") != 1 || metrics.Count("push_notify_total", "failed") != 1 {
		t.Fatalf("metrics ok=%v failed=%v", metrics.Count("push_notify_total", "ok"), metrics.Count("push_notify_total", "failed"))
	}
	if err := w.Notify(context.Background(), "acme", delivery.Notification{}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Notify after Close = %v", err)
	}
}

func TestWebhookDropsWhenFullAndTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	metrics := memory.NewMetrics()
	w, err := NewWebhook(WebhookConfig{URL: srv.URL, Timeout: 200 * time.Millisecond, Queue: 1, Senders: 1}, metrics, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var dropped int
	for range 5 {
		if errors.Is(w.Notify(context.Background(), "acme", delivery.Notification{Users: []int64{1}}), ErrQueueFull) {
			dropped++
		}
	}
	if dropped == 0 || metrics.Count("push_notify_total", "dropped") != float64(dropped) {
		t.Fatalf("dropped %d, metric %v", dropped, metrics.Count("push_notify_total", "dropped"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v (posts must time out)", err)
	}
	if metrics.Count("push_notify_total", "failed") != float64(5-dropped) {
		t.Fatalf("failed = %v, want %d timeouts", metrics.Count("push_notify_total", "failed"), 5-dropped)
	}
}

func TestWebhookRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "http://", "::"} {
		if _, err := NewWebhook(WebhookConfig{URL: u}, memory.NewMetrics(), slog.New(slog.DiscardHandler)); err == nil {
			t.Fatalf("NewWebhook(%q) succeeded", u)
		}
	}
}
