// Package apns implements ports.PushProvider for Apple Push Notification service over HTTP/2
// with token (.p8) authentication, through github.com/sideshow/apns2 (docs/DESIGN.md issue-32
// "Native push").
package apns

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/payload"
	"github.com/sideshow/apns2/token"
	"golang.org/x/net/http2"

	"github.com/imdhq/imd/core/domain/pushtoken"
	"github.com/imdhq/imd/ports"
)

// Config is the provider key of an Apple developer team.
type Config struct {
	KeyPEM []byte // the .p8 file's contents
	KeyID  string
	TeamID string
	// Host is "production", "development" (the sandbox) or a URL (a local fake).
	Host string
	// TLS is the client's TLS config; nil: the system roots.
	TLS     *tls.Config
	Timeout time.Duration // per request; default 10s
}

// Client sends alerts to APNs.
type Client struct{ c *apns2.Client }

var _ ports.PushProvider = (*Client)(nil)

// New parses the key and builds the HTTP/2 client; it connects on the first send.
func New(cfg Config) (*Client, error) {
	key, err := token.AuthKeyFromBytes(cfg.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("apns: auth key: %w", err)
	}
	if cfg.KeyID == "" || cfg.TeamID == "" || cfg.Host == "" {
		return nil, errors.New("apns: key id, team id and host are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	c := apns2.NewTokenClient(&token.Token{AuthKey: key, KeyID: cfg.KeyID, TeamID: cfg.TeamID})
	c.Host = map[string]string{"production": apns2.HostProduction, "development": apns2.HostDevelopment}[cfg.Host]
	if c.Host == "" {
		c.Host = cfg.Host
	}
	// apns2's own transport dials through a package variable; this one is the client's.
	c.HTTPClient = &http.Client{Timeout: cfg.Timeout, Transport: &http2.Transport{TLSClientConfig: cfg.TLS, ReadIdleTimeout: 15 * time.Second}}
	return &Client{c: c}, nil
}

// Send posts a to /3/device/<token> with the token's app id as apns-topic. A 410 or
// BadDeviceToken is pushtoken.ErrInvalidToken; 429, 5xx, an expired provider token or no
// answer are pushtoken.ErrRetryable (issue 32).
func (c *Client) Send(ctx context.Context, a pushtoken.Alert) error {
	p := payload.NewPayload().AlertTitle(a.Title).Badge(a.Badge).Sound("default").ThreadID(a.CollapseID).
		Custom("conversation_id", strconv.FormatInt(a.Conversation, 10)).Custom("msg_id", strconv.FormatInt(a.MsgID, 10))
	if a.Body != "" {
		p = p.AlertBody(a.Body)
	}
	n := &apns2.Notification{DeviceToken: a.Token.Token, Topic: a.Token.AppID, CollapseID: a.CollapseID,
		PushType: apns2.PushTypeAlert, Priority: apns2.PriorityHigh, Payload: p}
	res, err := c.c.PushWithContext(ctx, n)
	if err != nil {
		return fmt.Errorf("apns: %w: %w", pushtoken.ErrRetryable, err)
	}
	return classify(res.StatusCode, res.Reason)
}

// classify maps an APNs answer to the use case's error kinds.
func classify(status int, reason string) error {
	switch {
	case status == http.StatusOK:
		return nil
	case status == http.StatusGone || reason == apns2.ReasonBadDeviceToken || reason == apns2.ReasonUnregistered:
		return fmt.Errorf("apns: HTTP %d %s: %w", status, reason, pushtoken.ErrInvalidToken)
	case status == http.StatusTooManyRequests || status >= 500 || reason == apns2.ReasonExpiredProviderToken:
		return fmt.Errorf("apns: HTTP %d %s: %w", status, reason, pushtoken.ErrRetryable)
	default:
		return fmt.Errorf("apns: HTTP %d %s", status, reason)
	}
}
