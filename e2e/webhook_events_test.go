package e2e

// Member, friendship and report events (issue 32 part 2, docs/DESIGN.md issue-32 "Member,
// friendship and report events") through the real binary: a group made, members added by an
// operator and by an admin and one leaving, a friendship made and ended and a message
// reported reach an endpoint as signed events in the order they happened, each naming the
// user who acted (by; none for an operator), a refused request retried; and a deleted bot's
// token stops working.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
)

func TestMemberFriendshipAndReportEventsReachAnEndpoint(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_WEBHOOKS_INTERVAL": "100ms", "IMD_WEBHOOKS_SETTLE": "500ms",
		"IMD_WEBHOOKS_FIRST_RETRY": "200ms", "IMD_WEBHOOKS_MAX_BACKOFF": "400ms", "IMD_WEBHOOKS_MAX_ATTEMPTS": "1000"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner, member := srv.User(1), srv.User(2)
	srv.User(3)
	srv.User(4)

	type event struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Topic    string  `json:"topic"`
			Users    []int64 `json:"user_ids"`
			Friends  bool    `json:"friends"`
			By       *int64  `json:"by"` // nil: absent
			ReportID int64   `json:"report_id"`
			Reporter int64   `json:"reporter"`
			Reason   string  `json:"reason"`
		} `json:"data"`
	}
	var (
		mu      sync.Mutex
		secret  string
		refused bool // the first request is refused once: it is retried, the rest wait behind it
		got     []event
	)
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var e event
		if !readEvent(t, w, r, secret, &e) {
			return
		}
		if !refused {
			refused = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if !slices.ContainsFunc(got, func(g event) bool { return g.ID == e.ID }) { // at least once: dedupe on the id
			got = append(got, e)
		}
	}))
	defer hooks.Close()
	var made struct {
		Secret string `json:"secret"`
	}
	srv.MustAdmin("POST", "/webhooks", map[string]any{"url": hooks.URL,
		"events": []string{"member.joined", "member.left", "friendship.changed", "report.filed"}}, &made)
	mu.Lock()
	secret = made.Secret
	mu.Unlock()

	topic := srv.Group(61, 1, 2)
	srv.MustAdmin("POST", "/groups/61/members", map[string]any{"user_ids": []int64{3, 2}}, nil) // 2 is a member already
	srv.MustAdmin("PUT", "/groups/61/members/3/role", map[string]any{"role": "admin"}, nil)
	if status, failure := call(t, srv, srv.Token(3), "POST", "/api/v1/groups/61/members", map[string]any{"user_ids": []int64{4}}, nil); status != http.StatusOK {
		t.Fatalf("an admin adds: HTTP %d %+v", status, failure)
	}
	if status, failure := call(t, srv, member, "DELETE", "/api/v1/groups/61/members/2", nil, nil); status != http.StatusOK {
		t.Fatalf("leave: HTTP %d %+v", status, failure)
	}
	if status, failure := call(t, srv, owner, "POST", "/api/v1/friends/requests", map[string]any{"user_id": 3}, nil); status != http.StatusOK {
		t.Fatalf("friend request: HTTP %d %+v", status, failure)
	}
	if status, failure := call(t, srv, srv.Token(3), "POST", "/api/v1/friends/requests/1/accept", nil, nil); status != http.StatusOK {
		t.Fatalf("accept: HTTP %d %+v", status, failure)
	}
	c := srv.Connect(ctx, owner, 1)
	ack := mustSend(t, ctx, c, wire.SendMessageRequest{Topic: topic, ClientMsgID: "rude", Type: "text", Content: json.RawMessage(`{"text":"rude"}`)})
	if status, failure := call(t, srv, srv.Token(3), "POST", "/api/v1/reports", map[string]any{"topic": topic, "seq": ack.Seq, "reason": "spam"}, nil); status != http.StatusOK {
		t.Fatalf("report: HTTP %d %+v", status, failure)
	}
	srv.MustAdmin("DELETE", "/friendships/1/3", nil, nil)

	eventually(t, 30*time.Second, "seven events delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 7
	})
	mu.Lock()
	defer mu.Unlock()
	want := []struct {
		typ     string
		users   []int64
		friends bool
		by      int64 // 0: an operator's change, so no by at all
	}{
		{"member.joined", []int64{1, 2}, false, 0},
		{"member.joined", []int64{3}, false, 0},
		{"member.joined", []int64{4}, false, 3}, // by the admin
		{"member.left", []int64{2}, false, 2},   // the member leaving
		{"friendship.changed", []int64{1, 3}, true, 3},
		{"report.filed", nil, false, 0},
		{"friendship.changed", []int64{1, 3}, false, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Type != w.typ || !slices.Equal(g.Data.Users, w.users) || g.Data.Friends != w.friends || (g.Data.By == nil) != (w.by == 0) || (g.Data.By != nil && *g.Data.By != w.by) {
			t.Fatalf("event %d = %+v, want %s of %v (friends %v) by %d", i, g, w.typ, w.users, w.friends, w.by)
		}
	}
	if r := got[5].Data; r.Reporter != 3 || r.Topic != topic || r.Reason != "spam" || r.ReportID == 0 {
		t.Fatalf("report event %+v, want user 3's report of %s", r, topic)
	}
}

// TestADeletedBotsTokenStopsWorking: DELETE .../bots/{id} revokes the bot's token, and a bot
// with an endpoint bound to it is not deleted.
func TestADeletedBotsTokenStopsWorking(t *testing.T) {
	srv := Start(t, Options{})
	var made struct {
		Token string `json:"token"`
	}
	srv.MustAdmin("POST", "/bots", map[string]any{"bot_id": 910, "name": "gone"}, &made)
	srv.MustAdmin("POST", "/bots", map[string]any{"bot_id": 911, "name": "bound"}, nil)
	srv.MustAdmin("POST", "/webhooks", map[string]any{"url": "https://hooks.example/in", "events": []string{"message.created"}, "bot_id": 911}, nil)
	if status, failure := call(t, srv, made.Token, "GET", "/api/v1/friends", nil, nil); status != http.StatusOK {
		t.Fatalf("the bot's token before the delete: HTTP %d %+v", status, failure)
	}
	srv.MustAdmin("DELETE", "/bots/910", nil, nil)
	if status, _ := call(t, srv, made.Token, "GET", "/api/v1/friends", nil, nil); status != http.StatusUnauthorized {
		t.Fatalf("the deleted bot's token: HTTP %d, want 401", status)
	}
	if status := srv.Admin("DELETE", "/bots/910", nil, nil); status != http.StatusNotFound {
		t.Fatalf("deleting it again: HTTP %d, want 404", status)
	}
	if status := srv.Admin("DELETE", "/bots/911", nil, nil); status != http.StatusConflict {
		t.Fatalf("deleting a bot with an endpoint bound: HTTP %d, want 409", status)
	}
}
