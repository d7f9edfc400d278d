// Package adminapi is a typed client of the imd admin HTTP API (PROTOCOL.md
// §6), shared by imctl, its load generator and end-to-end tests.
package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
)

// maxErrorBody bounds how much of a non-JSON error body an Error keeps.
const maxErrorBody = 512

// Error is a non-2xx answer: the HTTP status and the {code, msg} body.
type Error struct {
	Method string `json:"-"`
	Path   string `json:"-"`
	Status int    `json:"-"`
	Code   int    `json:"code"`
	Msg    string `json:"msg"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("admin %s %s: HTTP %d: code %d: %s", e.Method, e.Path, e.Status, e.Code, e.Msg)
}

// CodeOf returns the contract code of an admin error, or 0 when err is not
// one.
func CodeOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// Retryable reports whether a request may succeed later: imd did not answer, or answered
// that it cannot serve now (5xx: starting, stopping). A refusal (4xx) is final.
func Retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Status >= 500
	}
	return err != nil
}

// Client calls the admin API of one tenant. It is safe for concurrent use.
type Client struct {
	base   string // e.g. http://127.0.0.1:8080/admin/v1/tenants/default
	key    string
	tenant string
	hc     *http.Client
}

// New returns a client for the tenant at baseURL (scheme://host:port of the
// HTTP listener). A nil hc gets a client with a 30 s timeout that keeps
// enough idle connections for a load generator's setup burst.
func New(baseURL, adminKey, tenant string, hc *http.Client) *Client {
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		hc = &http.Client{Timeout: 30 * time.Second, Transport: tr}
	}
	return &Client{
		base:   strings.TrimRight(baseURL, "/") + "/admin/v1/tenants/" + url.PathEscape(tenant),
		key:    adminKey,
		tenant: tenant,
		hc:     hc,
	}
}

// Tenant is the tenant the client acts on.
func (c *Client) Tenant() string { return c.tenant }

type createUserRequest struct {
	UserID   int64  `json:"user_id"`
	Nickname string `json:"nickname,omitempty"`
}

// CreateUser registers a user; an existing user is left as is.
func (c *Client) CreateUser(ctx context.Context, userID int64, nickname string) error {
	return c.do(ctx, http.MethodPost, "/users", createUserRequest{userID, nickname}, nil)
}

type tokenRequest struct {
	UserID     int64 `json:"user_id"`
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

type tokenAnswer struct {
	Token string `json:"token"`
}

// Token mints a client token; ttl 0 means the server's default.
func (c *Client) Token(ctx context.Context, userID int64, ttl time.Duration) (string, error) {
	var out tokenAnswer
	if err := c.do(ctx, http.MethodPost, "/tokens", tokenRequest{userID, int64(ttl / time.Second)}, &out); err != nil {
		return "", err
	}
	if out.Token == "" {
		return "", fmt.Errorf("admin POST /tokens: answer has no token")
	}
	return out.Token, nil
}

type friendshipRequest struct {
	UserA int64 `json:"user_a"`
	UserB int64 `json:"user_b"`
}

// Friend makes two users friends.
func (c *Client) Friend(ctx context.Context, a, b int64) error {
	return c.do(ctx, http.MethodPost, "/friendships", friendshipRequest{a, b}, nil)
}

// Group is a created group.
type Group struct {
	GroupID        int64  `json:"group_id"`
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
}

type createGroupRequest struct {
	GroupID int64   `json:"group_id"`
	Owner   int64   `json:"owner"`
	Members []int64 `json:"members"`
}

// CreateGroup creates a group; the owner is a member too.
func (c *Client) CreateGroup(ctx context.Context, groupID, owner int64, members []int64) (Group, error) {
	var g Group
	err := c.do(ctx, http.MethodPost, "/groups", createGroupRequest{groupID, owner, nonNil(members)}, &g)
	return g, err
}

// userIDs is a list of users, sent (add members) and answered (blocks).
type userIDs struct {
	UserIDs []int64 `json:"user_ids"`
}

// AddMembers adds users to a group.
func (c *Client) AddMembers(ctx context.Context, groupID int64, ids []int64) error {
	return c.do(ctx, http.MethodPost, "/groups/"+strconv.FormatInt(groupID, 10)+"/members", userIDs{nonNil(ids)}, nil)
}

// Message reads one message by topic and seq.
func (c *Client) Message(ctx context.Context, topic string, seq int64) (wire.Message, error) {
	var m wire.Message
	err := c.do(ctx, http.MethodGet, "/topics/"+url.PathEscape(topic)+"/messages/"+strconv.FormatInt(seq, 10), nil, &m)
	return m, err
}

// Page is one page of a topic's messages. Forward pages (since) also carry
// where to continue: LastSeq and HasMore.
type Page struct {
	Messages []wire.Message `json:"messages"`
	LastSeq  int64          `json:"last_seq,omitempty"`
	HasMore  bool           `json:"has_more,omitempty"`
}

// NoSince asks Messages for a backward page.
const NoSince int64 = -1

// Messages pages a topic. With since ≥ 0 it reads forward, the messages
// after seq since, oldest first (since 0 starts at the beginning). With
// since = NoSince it reads backward, newest first: older than before, or the
// newest when before is 0. limit 0 means the server's default.
func (c *Client) Messages(ctx context.Context, topic string, before, since int64, limit int) (Page, error) {
	q := url.Values{}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if since >= 0 {
		q.Set("since", strconv.FormatInt(since, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/topics/" + url.PathEscape(topic) + "/messages"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p Page
	err := c.do(ctx, http.MethodGet, path, nil, &p)
	return p, err
}

// Shard is one catalog row: a month table and its lifecycle state. Times
// are Unix milliseconds, 0 for an empty table.
type Shard struct {
	Month        string `json:"shard_month"`
	Table        string `json:"table_name"`
	Status       string `json:"status"`
	RowCount     int64  `json:"row_count"`
	MinCreatedAt int64  `json:"min_created_at"`
	MaxCreatedAt int64  `json:"max_created_at"`
	UpdatedAt    int64  `json:"updated_at"`
	TableDropped bool   `json:"table_dropped"`
	// SealsAt is when a writable or sealing month stops taking late writes; 0 for the others.
	SealsAt int64 `json:"seals_at,omitempty"`
}

type shardsAnswer struct {
	Shards []Shard `json:"shards"`
}

// Shards lists the catalog of the tenant's month tables.
func (c *Client) Shards(ctx context.Context) ([]Shard, error) {
	var out shardsAnswer
	err := c.do(ctx, http.MethodGet, "/shards", nil, &out)
	return out.Shards, err
}

type advanceRequest struct {
	Month string `json:"month"`
}

type activeMonthAnswer struct {
	ActiveMonth string `json:"active_month"`
}

// Advance prepares month (YYYYMM) and moves the active month forward to it;
// it returns the active month after the call. A month before the active one
// is refused with 40001.
func (c *Client) Advance(ctx context.Context, month string) (string, error) {
	var out activeMonthAnswer
	err := c.do(ctx, http.MethodPost, "/shards/advance", advanceRequest{month}, &out)
	return out.ActiveMonth, err
}

// Segment is the part of a topic stored in one month table.
type Segment struct {
	Month  string `json:"month"`
	MinSeq int64  `json:"min_seq"`
	MaxSeq int64  `json:"max_seq"`
	Count  int64  `json:"count"`
}

// Route is a topic's route: its month segments in seq order.
type Route struct {
	Topic    string    `json:"topic"`
	Segments []Segment `json:"segments"`
}

// RebuildRoute rewrites a topic's Redis route from the MySQL mirror and
// returns it.
func (c *Client) RebuildRoute(ctx context.Context, topic string) (Route, error) {
	var out Route
	err := c.do(ctx, http.MethodPost, "/topics/"+url.PathEscape(topic)+"/route/rebuild", nil, &out)
	return out, err
}

// do sends one request and decodes a 2xx JSON answer into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("admin %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("admin %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("admin %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Method: method, Path: path, Status: resp.StatusCode}
		if json.Unmarshal(raw, e) != nil || e.Msg == "" && e.Code == 0 {
			e.Msg = strings.TrimSpace(string(raw[:min(len(raw), maxErrorBody)]))
		}
		return e
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("admin %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
