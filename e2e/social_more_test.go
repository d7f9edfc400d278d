package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// dailyTotals sums the day rows of GET /stats.
type dailyTotals struct{ messages, group, p2p int64 }

func statsDays(t *testing.T, srv *Server) dailyTotals {
	t.Helper()
	var st struct {
		Days []struct {
			Day           string `json:"day"`
			Messages      int64  `json:"messages"`
			GroupMessages int64  `json:"group_messages"`
			P2PMessages   int64  `json:"p2p_messages"`
		} `json:"days"`
	}
	srv.MustAdmin("GET", "/stats", nil, &st)
	var sum dailyTotals
	for _, d := range st.Days {
		if _, err := time.Parse(time.DateOnly, d.Day); err != nil {
			t.Fatalf("day %q: %v", d.Day, err)
		}
		sum.messages += d.Messages
		sum.group += d.GroupMessages
		sum.p2p += d.P2PMessages
	}
	return sum
}

// TestSocialDailyStats: sends show up in the daily summary within a flush interval, split by
// conversation kind, and a graceful stop flushes what was summed since the last flush.
func TestSocialDailyStats(t *testing.T) {
	srv := Start(t, Options{Env: withRegistry(t, map[string]string{})})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tok := srv.User(1)
	srv.User(2)
	srv.MustAdmin("POST", "/friendships", map[string]int64{"user_a": 1, "user_b": 2}, nil)
	topic := srv.Group(60, 1, 2)
	c1 := srv.Connect(ctx, tok, 1)
	for i := range 3 {
		mustSend(t, ctx, c1, textMessage(topic, fmt.Sprint("g-", i), "to the group"))
	}
	for i := range 2 {
		if _, err := sendTo(ctx, c1, 2, fmt.Sprint("p-", i), "to a friend"); err != nil {
			t.Fatal(err)
		}
	}
	want := dailyTotals{messages: 5, group: 3, p2p: 2}
	var got dailyTotals
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if got = statsDays(t, srv); got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daily stats = %+v, want %+v", got, want)
		}
	}
	var months struct {
		Months []struct {
			Messages int64 `json:"messages"`
		} `json:"months"`
	}
	srv.MustAdmin("GET", "/stats", nil, &months)
	var inMonths int64
	for _, m := range months.Months {
		inMonths += m.Messages
	}
	if inMonths != want.messages {
		t.Fatalf("months hold %d messages, days %d", inMonths, want.messages)
	}

	// Counted but not yet flushed when the server stops: the stop flushes them.
	mustSend(t, ctx, c1, textMessage(topic, "g-last", "just before the stop"))
	srv.Stop()
	var total, group int64
	if err := srv.TenantDB().QueryRowContext(ctx, "SELECT CAST(SUM(messages) AS SIGNED), CAST(SUM(group_messages) AS SIGNED) FROM t_daily_stats").Scan(&total, &group); err != nil {
		t.Fatal(err)
	}
	if total != 6 || group != 4 {
		t.Fatalf("after a graceful stop t_daily_stats holds %d messages (%d group), want 6 (4)", total, group)
	}
}

// awaitMessage waits for a MESSAGE push of topic that match accepts, skipping others.
func awaitMessage(t *testing.T, c *client.Conn, topic string, match func(wire.Message) bool) wire.Message {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case p := <-c.Pushes():
			if p.Command == wire.CmdMessage && p.Message != nil && p.Message.Topic == topic && match(*p.Message) {
				return *p.Message
			}
		case <-deadline:
			t.Fatalf("no matching message of %s arrived", topic)
		}
	}
}

// TestSocialOwnershipTransfer: the owner cannot leave; after handing the group over it is an
// admin and leaves, and the new owner runs the group, mute-all included, which every member
// learns of through one system message in the topic.
func TestSocialOwnershipTransfer(t *testing.T) {
	srv := Start(t, Options{Env: withRegistry(t, map[string]string{})})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tok := map[int64]string{}
	for _, id := range []int64{1, 2, 3} {
		tok[id] = srv.User(id)
	}
	topic := srv.Group(61, 1, 2, 3)
	c1, c2, c3 := srv.Connect(ctx, tok[1], 1), srv.Connect(ctx, tok[2], 1), srv.Connect(ctx, tok[3], 1)

	refused(t, srv, tok[1], "DELETE", "/api/v1/groups/61/members/1", nil, 40301)
	refused(t, srv, tok[2], "PUT", "/api/v1/groups/61/owner", map[string]int64{"user_id": 2}, 40301)
	refused(t, srv, tok[1], "PUT", "/api/v1/groups/61/owner", map[string]int64{"user_id": 9}, 40401)
	var handed struct {
		GroupID int64 `json:"group_id"`
		Owner   int64 `json:"owner"`
	}
	mustCall(t, srv, tok[1], "PUT", "/api/v1/groups/61/owner", map[string]int64{"user_id": 2}, &handed)
	if handed.GroupID != 61 || handed.Owner != 2 {
		t.Fatalf("handover = %+v", handed)
	}
	awaitSocialEvent(t, c2, "member", "role")
	awaitSocialEvent(t, c1, "member", "role")

	mustCall(t, srv, tok[1], "DELETE", "/api/v1/groups/61/members/1", nil, nil)
	_, err := c1.Send(ctx, textMessage(topic, "gone-1", "still here?"))
	assertCode(t, err, 40301)
	refused(t, srv, tok[2], "DELETE", "/api/v1/groups/61/members/2", nil, 40301) // the new owner stays

	mustCall(t, srv, tok[2], "PUT", "/api/v1/groups/61/mute_all", map[string]bool{"mute_all": true}, nil)
	ev := awaitMessage(t, c3, topic, func(m wire.Message) bool { return m.Type == wire.TypeSystem })
	var content struct {
		Event   string `json:"event"`
		MuteAll bool   `json:"mute_all"`
		By      int64  `json:"by"`
	}
	if err := json.Unmarshal(ev.Content, &content); err != nil || content.Event != "mute_all" || !content.MuteAll || content.By != 2 || ev.From != 2 {
		t.Fatalf("mute-all event = %+v (%s), %v", ev, ev.Content, err)
	}
	_, err = c3.Send(ctx, textMessage(topic, "muted-3", "member"))
	assertCode(t, err, 40301)
	mustSend(t, ctx, c2, textMessage(topic, "owner-2", "the new owner speaks"))
	var g struct {
		Owner   int64 `json:"owner"`
		MuteAll bool  `json:"mute_all"`
	}
	mustCall(t, srv, tok[3], "GET", "/api/v1/groups/61", nil, &g)
	if g.Owner != 2 || !g.MuteAll {
		t.Fatalf("group = %+v, want owner 2 and muted", g)
	}
	// The same switch again changes and announces nothing.
	mustCall(t, srv, tok[2], "PUT", "/api/v1/groups/61/mute_all", map[string]bool{"mute_all": true}, nil)
	var page struct {
		Messages []wire.Message `json:"messages"`
	}
	mustCall(t, srv, tok[3], "GET", "/api/v1/topics/"+topic+"/messages", nil, &page)
	events := 0
	for _, m := range page.Messages {
		if m.Type == wire.TypeSystem {
			events++
		}
	}
	if events != 1 {
		t.Fatalf("history holds %d system events, want the one mute-all", events)
	}
}

// TestSocialRemovedMemberLosesTheConversation: a removed member's conversation list (SYNC_INBOX
// and the HTTP list) no longer shows the group.
func TestSocialRemovedMemberLosesTheConversation(t *testing.T) {
	srv := Start(t, Options{Env: withRegistry(t, map[string]string{})})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tok1, tok2 := srv.User(1), srv.User(2)
	var g struct {
		Topic          string `json:"topic"`
		ConversationID int64  `json:"conversation_id"`
	}
	srv.MustAdmin("POST", "/groups", map[string]any{"group_id": 62, "owner": 1, "members": []int64{2}}, &g)
	c1, c2 := srv.Connect(ctx, tok1, 1), srv.Connect(ctx, tok2, 1)
	mustSend(t, ctx, c1, textMessage(g.Topic, "m-1", "hello"))
	listed := func() bool {
		dialogs, _, _ := syncInbox(t, ctx, c2, wire.SyncInboxRequest{})
		for _, d := range dialogs {
			if d.ConversationID == g.ConversationID || d.Topic == g.Topic {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); !listed(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the group never reached member 2's dialogs")
		}
	}

	mustCall(t, srv, tok1, "DELETE", "/api/v1/groups/62/members/2", nil, nil)
	awaitSocialEvent(t, c2, "member", "removed")
	if listed() {
		t.Fatal("SYNC_INBOX still lists the group after the removal")
	}
	var list struct {
		Conversations []struct {
			ConversationID int64 `json:"conversation_id"`
		} `json:"conversations"`
	}
	mustCall(t, srv, tok2, "GET", "/api/v1/conversations", nil, &list)
	for _, c := range list.Conversations {
		if c.ConversationID == g.ConversationID {
			t.Fatalf("the conversation list still shows the group: %+v", list.Conversations)
		}
	}
}

// meFrom calls GET /api/v1/me with token as if the local Nginx forwarded it from addr, and
// returns the status, the error code and Retry-After.
func meFrom(t *testing.T, srv *Server, token, addr string) (int, int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+srv.HTTPAddr+"/api/v1/me", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Real-IP", addr) // believed: the test connects from loopback, like Nginx
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e apiError
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(raw, &e); err != nil || e.Msg == "" {
			t.Fatalf("HTTP %d with body %q, want {code,msg}", resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, e.Code, resp.Header.Get("Retry-After")
}

// TestClientAPIRateLimits: a burst over a user's budget, or over an address's, is answered 429
// with code 42901; other users and addresses, and the admin API, go on.
func TestClientAPIRateLimits(t *testing.T) {
	srv := Start(t, Options{Env: withRegistry(t, map[string]string{
		"IMD_RATE_LIMIT_HTTP_PER_SECOND": "5", "IMD_RATE_LIMIT_PER_IP_HTTP_PER_SECOND": "20",
	})})
	tok := map[int64]string{}
	for id := int64(1); id <= 12; id++ {
		tok[id] = srv.User(id)
	}
	// burst sends n calls and counts the refused ones, checking every answer.
	burst := func(n int, token func(i int) string, addr func(i int) string) int {
		t.Helper()
		refusedCalls := 0
		for i := range n {
			status, code, retry := meFrom(t, srv, token(i), addr(i))
			switch {
			case status == http.StatusOK:
			case status == http.StatusTooManyRequests && code == 42901 && retry != "":
				refusedCalls++
			default:
				t.Fatalf("call %d: HTTP %d code %d Retry-After %q", i, status, code, retry)
			}
		}
		return refusedCalls
	}

	t.Run("per user, whatever the address", func(t *testing.T) {
		n := burst(30, func(int) string { return tok[1] }, func(i int) string { return fmt.Sprintf("198.51.100.%d", i+1) })
		if n == 0 {
			t.Fatal("30 calls of one user at 5/s: none refused")
		}
		if status, _, _ := meFrom(t, srv, tok[2], "198.51.100.1"); status != http.StatusOK {
			t.Fatalf("another user: HTTP %d", status)
		}
	})

	t.Run("per address, whatever the user", func(t *testing.T) {
		users := []int64{3, 4, 5, 6, 7, 8, 9, 10, 11} // 9 users, at most 5 calls each: under their budgets
		n := burst(40, func(i int) string { return tok[users[i%len(users)]] }, func(int) string { return "203.0.113.5" })
		if n == 0 {
			t.Fatal("40 calls from one address at 20/s: none refused")
		}
		if status, _, _ := meFrom(t, srv, tok[12], "203.0.113.6"); status != http.StatusOK {
			t.Fatalf("another address: HTTP %d", status)
		}
	})

	t.Run("the admin API is not limited", func(t *testing.T) {
		for range 50 {
			srv.MustAdmin("GET", "/users/1", nil, nil)
		}
	})
}
