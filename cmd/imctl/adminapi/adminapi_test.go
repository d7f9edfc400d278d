package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// recorded is what the fake server saw of one request.
type recorded struct {
	method, uri, auth, body string
}

func fakeServer(t *testing.T, status int, answer string) (*Client, *recorded) {
	t.Helper()
	var got recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = recorded{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), string(b)}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return New(srv.URL+"/", "k3y", "acme corp", nil), &got
}

func TestRequests(t *testing.T) {
	ctx := context.Background()
	const prefix = "/admin/v1/tenants/acme%20corp"
	tests := []struct {
		name     string
		answer   string
		call     func(c *Client) (any, error)
		wantReq  recorded
		wantResp string // the call's result as JSON
	}{
		{
			name: "create user", answer: `{}`,
			call:    func(c *Client) (any, error) { return nil, c.CreateUser(ctx, 7, "ann") },
			wantReq: recorded{"POST", prefix + "/users", "Bearer k3y", `{"user_id":7,"nickname":"ann"}`},
		},
		{
			name: "create user without nickname, empty answer", answer: ``,
			call:    func(c *Client) (any, error) { return nil, c.CreateUser(ctx, 7, "") },
			wantReq: recorded{"POST", prefix + "/users", "Bearer k3y", `{"user_id":7}`},
		},
		{
			name: "token with ttl", answer: `{"token":"abc"}`,
			call:     func(c *Client) (any, error) { return c.Token(ctx, 7, 90*time.Minute) },
			wantReq:  recorded{"POST", prefix + "/tokens", "Bearer k3y", `{"user_id":7,"ttl_seconds":5400}`},
			wantResp: `"abc"`,
		},
		{
			name: "friend", answer: `{}`,
			call:    func(c *Client) (any, error) { return nil, c.Friend(ctx, 1, 2) },
			wantReq: recorded{"POST", prefix + "/friendships", "Bearer k3y", `{"user_a":1,"user_b":2}`},
		},
		{
			name: "create group", answer: `{"group_id":5,"topic":"grp_5","conversation_id":9007199254740993}`,
			call:     func(c *Client) (any, error) { return c.CreateGroup(ctx, 5, 1, []int64{2, 3}) },
			wantReq:  recorded{"POST", prefix + "/groups", "Bearer k3y", `{"group_id":5,"owner":1,"members":[2,3]}`},
			wantResp: `{"group_id":5,"topic":"grp_5","conversation_id":9007199254740993}`,
		},
		{
			name: "create group without members sends an empty list", answer: `{"group_id":5,"topic":"grp_5","conversation_id":1}`,
			call:     func(c *Client) (any, error) { return c.CreateGroup(ctx, 5, 1, nil) },
			wantReq:  recorded{"POST", prefix + "/groups", "Bearer k3y", `{"group_id":5,"owner":1,"members":[]}`},
			wantResp: `{"group_id":5,"topic":"grp_5","conversation_id":1}`,
		},
		{
			name: "add members", answer: `{}`,
			call:    func(c *Client) (any, error) { return nil, c.AddMembers(ctx, 5, []int64{4}) },
			wantReq: recorded{"POST", prefix + "/groups/5/members", "Bearer k3y", `{"user_ids":[4]}`},
		},
		{
			name: "message", answer: `{"topic":"grp_5","seq":3,"msg_id":11,"from":1,"content":{"text":"hi"}}`,
			call: func(c *Client) (any, error) {
				m, err := c.Message(ctx, "grp_5", 3)
				return []any{m.Seq, m.MsgID, m.Content}, err
			},
			wantReq: recorded{"GET", prefix + "/topics/grp_5/messages/3", "Bearer k3y", ``}, wantResp: `[3,11,{"text":"hi"}]`,
		},
		{
			name: "messages before", answer: `{"messages":[{"seq":9},{"seq":8}]}`,
			call: func(c *Client) (any, error) {
				p, err := c.Messages(ctx, "p2p_1_2", 10, NoSince, 2)
				return []any{len(p.Messages), p.Messages[1].Seq, p.HasMore}, err
			},
			wantReq: recorded{"GET", prefix + "/topics/p2p_1_2/messages?before=10&limit=2", "Bearer k3y", ``}, wantResp: `[2,8,false]`,
		},
		{
			name: "messages since", answer: `{"messages":[{"seq":5}],"last_seq":9,"has_more":true}`,
			call:    func(c *Client) (any, error) { return c.Messages(ctx, "grp_1", 0, 4, 0) },
			wantReq: recorded{"GET", prefix + "/topics/grp_1/messages?since=4", "Bearer k3y", ``},
			wantResp: `{"messages":[{"topic":"","conversation_id":0,"seq":5,"msg_id":0,"from":0,"client_msg_id":"","type":"","content":null,` +
				`"mentions":null,"mention_all":false,"reply_seq":0,"status":"","version":0,"created_at":0}],"last_seq":9,"has_more":true}`,
		},
		{
			name: "messages from the start", answer: `{"messages":[]}`,
			call:    func(c *Client) (any, error) { _, err := c.Messages(ctx, "grp_1", 0, 0, 200); return nil, err },
			wantReq: recorded{"GET", prefix + "/topics/grp_1/messages?limit=200&since=0", "Bearer k3y", ``},
		},
		{
			name: "newest messages", answer: `{"messages":[]}`,
			call:    func(c *Client) (any, error) { _, err := c.Messages(ctx, "grp_1", 0, NoSince, 0); return nil, err },
			wantReq: recorded{"GET", prefix + "/topics/grp_1/messages", "Bearer k3y", ``},
		},
		{
			name: "shards", answer: `{"shards":[{"shard_month":"202612","table_name":"im_group_messages_202612","status":"writable",` +
				`"row_count":12345678901234567,"min_created_at":1,"max_created_at":2,"updated_at":3,"table_dropped":true}]}`,
			call:    func(c *Client) (any, error) { return c.Shards(ctx) },
			wantReq: recorded{"GET", prefix + "/shards", "Bearer k3y", ``},
			wantResp: `[{"shard_month":"202612","table_name":"im_group_messages_202612","status":"writable",` +
				`"row_count":12345678901234567,"min_created_at":1,"max_created_at":2,"updated_at":3,"table_dropped":true}]`,
		},
		{
			name: "advance", answer: `{"active_month":"202612"}`,
			call:     func(c *Client) (any, error) { return c.Advance(ctx, "202612") },
			wantReq:  recorded{"POST", prefix + "/shards/advance", "Bearer k3y", `{"month":"202612"}`},
			wantResp: `"202612"`,
		},
		{
			name: "rebuild route", answer: `{"topic":"grp_1","segments":[{"month":"202611","min_seq":1,"max_seq":9,"count":9}]}`,
			call:     func(c *Client) (any, error) { return c.RebuildRoute(ctx, "grp_1") },
			wantReq:  recorded{"POST", prefix + "/topics/grp_1/route/rebuild", "Bearer k3y", ``},
			wantResp: `{"topic":"grp_1","segments":[{"month":"202611","min_seq":1,"max_seq":9,"count":9}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, got := fakeServer(t, http.StatusOK, tt.answer)
			resp, err := tt.call(c)
			if err != nil {
				t.Fatal(err)
			}
			if *got != tt.wantReq {
				t.Fatalf("request\n got %+v\nwant %+v", *got, tt.wantReq)
			}
			if tt.wantResp != "" {
				b, _ := json.Marshal(resp)
				if string(b) != tt.wantResp {
					t.Fatalf("result %s, want %s", b, tt.wantResp)
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		answer string
		want   Error
	}{
		{"contract error", 404, `{"code":40401,"msg":"user 7 not found"}`, Error{Method: "POST", Path: "/tokens", Status: 404, Code: 40401, Msg: "user 7 not found"}},
		{"plain text error", 502, "bad gateway\n", Error{Method: "POST", Path: "/tokens", Status: 502, Msg: "bad gateway"}},
		{"empty JSON error", 500, `{}`, Error{Method: "POST", Path: "/tokens", Status: 500, Msg: "{}"}},
		{"long body is cut", 500, strings.Repeat("x", 2000), Error{Method: "POST", Path: "/tokens", Status: 500, Msg: strings.Repeat("x", maxErrorBody)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := fakeServer(t, tt.status, tt.answer)
			_, err := c.Token(context.Background(), 7, 0)
			var e *Error
			if !errors.As(err, &e) || *e != tt.want {
				t.Fatalf("err = %#v, want %#v", err, tt.want)
			}
			if CodeOf(err) != tt.want.Code {
				t.Fatalf("CodeOf = %d", CodeOf(err))
			}
			if !strings.Contains(err.Error(), "HTTP "+itoa(tt.status)) {
				t.Fatalf("message %q lacks the status", err)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestBadAnswers(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		call   func(c *Client) error
	}{
		{"token missing", `{}`, func(c *Client) error { _, err := c.Token(context.Background(), 1, 0); return err }},
		{"not JSON", `<html>`, func(c *Client) error { _, err := c.CreateGroup(context.Background(), 1, 1, nil); return err }},
		{"shards not a list", `{"shards":{"month":1}}`, func(c *Client) error { _, err := c.Shards(context.Background()); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := fakeServer(t, http.StatusOK, tt.answer)
			if err := tt.call(c); err == nil || CodeOf(err) != 0 {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestTransportError(t *testing.T) {
	c := New("http://127.0.0.1:1", "k", "default", nil)
	if c.Tenant() != "default" {
		t.Fatalf("Tenant = %q", c.Tenant())
	}
	if err := c.Friend(context.Background(), 1, 2); err == nil || !strings.Contains(err.Error(), "/friendships") {
		t.Fatalf("err = %v", err)
	}
	if err := New("http://bad host", "k", "t", nil).Friend(context.Background(), 1, 2); err == nil {
		t.Fatal("a bad URL worked")
	}
}
