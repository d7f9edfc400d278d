package httpclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/webhook"
	domain "github.com/imdhq/imd/core/domain/webhook"
)

// TestSenderDeliversWhatTheClientVerifies posts a request signed by the server's signer to a
// local HTTP server that checks it with the Go client's verifier, as a bot would.
func TestSenderDeliversWhatTheClientVerifies(t *testing.T) {
	const secret = "whsec_test"
	body := []byte(`{"id":"grp_1:1:message.created","type":"message.created"}`)
	cases := []struct {
		name     string
		path     string
		signWith string
		want     int
	}{
		{"verified", "/in", secret, http.StatusNoContent},
		{"wrong secret", "/in", "whsec_other", http.StatusUnauthorized},
		{"redirect not followed", "/moved", secret, http.StatusFound},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/in", http.StatusFound)
			return
		}
		got, err := webhook.ReadVerified(r, secret, time.Now())
		if err != nil || string(got) != string(body) || r.Header.Get(webhook.EventIDHeader) != "grp_1:1:message.created" ||
			r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	s := NewSender(time.Second)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			headers := map[string]string{
				domain.SignatureHeader: domain.Sign(c.signWith, time.Now(), body),
				domain.EventIDHeader:   "grp_1:1:message.created",
			}
			status, err := s.Post(context.Background(), srv.URL+c.path, headers, body)
			if err != nil || status != c.want {
				t.Fatalf("Post = %d, %v; want %d", status, err, c.want)
			}
		})
	}
}

func TestSenderReportsNoAnswer(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	cases := []struct{ name, url string }{
		{"timeout", slow.URL},
		{"refused", closed.URL},
		{"bad url", "http://[::1"},
	}
	s := NewSender(100 * time.Millisecond)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if status, err := s.Post(context.Background(), c.url, nil, []byte("{}")); err == nil {
				t.Fatalf("Post = %d, nil; want an error", status)
			}
		})
	}
}
