// Package httpclient implements ports.WebhookSender with net/http: the outbound requests of
// event webhooks (docs/DESIGN.md issue-32 part 2).
package httpclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/imdhq/imd/ports"
)

// DefaultTimeout bounds one webhook request, answer included (DESIGN issue-32 "Retries").
const DefaultTimeout = 10 * time.Second

// drainLimit is how much of an answer is read so the connection can be reused; the body
// itself means nothing to imd.
const drainLimit = 4 << 10

// Sender posts webhook requests. It follows no redirect: a signed request is for the URL the
// operator registered, and a 3xx is an answer to retry, not a place to send the event to.
type Sender struct{ client *http.Client }

var _ ports.WebhookSender = (*Sender)(nil)

// NewSender returns a sender whose requests time out after timeout (DefaultTimeout when 0);
// it honours HTTPS_PROXY and the other proxy variables of the environment.
func NewSender(timeout time.Duration) *Sender {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Sender{client: &http.Client{
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Post sends body as JSON with headers.
func (s *Sender) Post(ctx context.Context, url string, headers map[string]string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("webhook request to %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "imd-webhooks/1")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("webhook post to %s: %w", url, err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, drainLimit))
	return res.StatusCode, nil
}
