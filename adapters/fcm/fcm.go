// Package fcm implements ports.PushProvider for Firebase Cloud Messaging's HTTP v1 API
// (`POST /v1/projects/{project}/messages:send`), authorized by a service account through
// golang.org/x/oauth2/google (docs/DESIGN.md issue-32 "Native push").
package fcm

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/imdhq/imd/core/domain/pushtoken"
	"github.com/imdhq/imd/ports"
)

// Scope is the OAuth scope FCM sends need.
const Scope = "https://www.googleapis.com/auth/firebase.messaging"

// DefaultEndpoint is FCM's.
const DefaultEndpoint = "https://fcm.googleapis.com"

// Config is a service account of the Firebase project.
type Config struct {
	// CredentialsJSON is the service account's key file; its token_uri is where tokens come from.
	CredentialsJSON []byte
	// Endpoint is DefaultEndpoint or a local fake's URL.
	Endpoint string
	// TLS is the client's TLS config (to the endpoint and the token URI); nil: the system roots.
	TLS     *tls.Config
	Timeout time.Duration // per request; default 10s
}

// Client sends alerts to FCM.
type Client struct {
	http *http.Client
	url  string
}

var _ ports.PushProvider = (*Client)(nil)

// New reads the service account; tokens are fetched on the first send and renewed before
// they expire.
func New(cfg Config) (*Client, error) {
	var sa struct {
		ProjectID string `json:"project_id"`
	}
	if err := json.Unmarshal(cfg.CredentialsJSON, &sa); err != nil || sa.ProjectID == "" {
		return nil, errors.New("fcm: credentials are not a service account key with a project_id")
	}
	jwtCfg, err := google.JWTConfigFromJSON(cfg.CredentialsJSON, Scope)
	if err != nil {
		return nil, fmt.Errorf("fcm: credentials: %w", err)
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	base := &http.Client{Timeout: cfg.Timeout, Transport: &http.Transport{TLSClientConfig: cfg.TLS, ForceAttemptHTTP2: true}}
	// The token source outlives any request: it is built with a context that only carries
	// the base client, never a caller's cancellation.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, base)
	client := &http.Client{Timeout: cfg.Timeout, Transport: &oauth2.Transport{Source: jwtCfg.TokenSource(ctx), Base: base.Transport}}
	return &Client{http: client, url: cfg.Endpoint + "/v1/projects/" + url.PathEscape(sa.ProjectID) + "/messages:send"}, nil
}

// message is the v1 send body.
type message struct {
	Message struct {
		Token        string            `json:"token"`
		Notification notification      `json:"notification"`
		Data         map[string]string `json:"data"`
		Android      struct {
			CollapseKey  string `json:"collapse_key"`
			Notification struct {
				Tag   string `json:"tag"`
				Count int    `json:"notification_count"`
			} `json:"notification"`
		} `json:"android"`
		APNs struct {
			Headers map[string]string `json:"headers"`
			Payload struct {
				APS struct {
					Badge int `json:"badge"`
				} `json:"aps"`
			} `json:"payload"`
		} `json:"apns"`
	} `json:"message"`
}

type notification struct {
	Title string `json:"title"`
	Body  string `json:"body,omitempty"`
}

// Send posts a. A 404 or an UNREGISTERED error code is pushtoken.ErrInvalidToken; 429, 5xx or
// no answer are pushtoken.ErrRetryable (issue 32).
func (c *Client) Send(ctx context.Context, a pushtoken.Alert) error {
	var m message
	mm := &m.Message
	mm.Token = a.Token.Token
	mm.Notification = notification{Title: a.Title, Body: a.Body}
	mm.Data = map[string]string{"conversation_id": strconv.FormatInt(a.Conversation, 10), "msg_id": strconv.FormatInt(a.MsgID, 10)}
	mm.Android.CollapseKey, mm.Android.Notification.Tag, mm.Android.Notification.Count = a.CollapseID, a.CollapseID, a.Badge
	mm.APNs.Headers = map[string]string{"apns-collapse-id": a.CollapseID}
	mm.APNs.Payload.APS.Badge = a.Badge
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("fcm: encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("fcm: request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("fcm: %w: %w", pushtoken.ErrRetryable, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return classify(resp.StatusCode, body)
}

// apiError is google.rpc.Status with FCM's error code among its details.
type apiError struct {
	Error struct {
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			ErrorCode string `json:"errorCode"`
		} `json:"details"`
	} `json:"error"`
}

func classify(status int, body []byte) error {
	if status == http.StatusOK {
		return nil
	}
	var e apiError
	_ = json.Unmarshal(body, &e)
	code := e.Error.Status
	for _, d := range e.Error.Details {
		if d.ErrorCode != "" {
			code = d.ErrorCode
		}
	}
	switch {
	case code == "UNREGISTERED" || status == http.StatusNotFound:
		return fmt.Errorf("fcm: HTTP %d %s: %w", status, code, pushtoken.ErrInvalidToken)
	case status == http.StatusTooManyRequests || status >= 500:
		return fmt.Errorf("fcm: HTTP %d %s: %w", status, code, pushtoken.ErrRetryable)
	default:
		return fmt.Errorf("fcm: HTTP %d %s: %s", status, code, e.Error.Message)
	}
}
