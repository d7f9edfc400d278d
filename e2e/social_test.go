package e2e

import (
	"bytes"
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

// apiError is the {"code","msg"} body of a failed HTTP call.
type apiError struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

// call sends a JSON request with a bearer credential (a user token or the admin key) to
// path and decodes a 2xx body into out; it returns the status and the error body.
func call(t *testing.T, srv *Server, bearer, method, path string, body, out any) (int, apiError) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+srv.HTTPAddr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e apiError
	if resp.StatusCode/100 != 2 {
		if err := json.Unmarshal(raw, &e); err != nil || e.Code == 0 || e.Msg == "" {
			t.Fatalf("%s %s: HTTP %d with body %q, want {code,msg}", method, path, resp.StatusCode, raw)
		}
		return resp.StatusCode, e
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, e
}

// mustCall is call that fails the test on a non-2xx answer.
func mustCall(t *testing.T, srv *Server, bearer, method, path string, body, out any) {
	t.Helper()
	if status, e := call(t, srv, bearer, method, path, body, out); status/100 != 2 {
		t.Fatalf("%s %s: HTTP %d %+v", method, path, status, e)
	}
}

// refused asserts an HTTP call fails with code.
func refused(t *testing.T, srv *Server, bearer, method, path string, body any, code int) {
	t.Helper()
	if status, e := call(t, srv, bearer, method, path, body, nil); e.Code != code {
		t.Fatalf("%s %s: HTTP %d %+v, want code %d", method, path, status, e, code)
	}
}

// withRegistry gives the server a tenant registry database of its own, dropped at the end, so
// tenants provisioned here never reach another test's server.
func withRegistry(t *testing.T, env map[string]string) map[string]string {
	t.Helper()
	db := "imd_registry_" + randomHex(6)
	env["IMD_TENANT_REGISTRY_DATABASE"] = db
	t.Cleanup(func() { dropDatabase(RequireServices(t).MySQLDSN, db) })
	return env
}

func sendTo(ctx context.Context, c *client.Conn, toUser int64, clientID, text string) (wire.SendAck, error) {
	req := textMessage("", clientID, text)
	req.ToUser = toUser
	return c.Send(ctx, req)
}

// awaitSocialEvent waits for the EVENT push of a friend or member change, skipping others.
func awaitSocialEvent(t *testing.T, c *client.Conn, kind, action string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case p := <-c.Pushes():
			if p.Command != wire.CmdEvent {
				continue
			}
			var ev struct {
				Type       string `json:"type"`
				Action     string `json:"action"`
				MailboxSeq int64  `json:"mailbox_seq"`
			}
			if err := json.Unmarshal(p.Envelope.Data, &ev); err != nil {
				t.Fatalf("EVENT data %s: %v", p.Envelope.Data, err)
			}
			if ev.Type == kind && ev.Action == action {
				if ev.MailboxSeq <= 0 {
					t.Fatalf("event %s %s has no mailbox seq: %s", kind, action, p.Envelope.Data)
				}
				return
			}
		case <-deadline:
			t.Fatalf("no %s %s event arrived", kind, action)
		}
	}
}

// TestSocialPermissions drives every send rule through the real binary: P2P friendship and
// blocks both ways, group mute-all and per-member mutes, removal, system accounts.
func TestSocialPermissions(t *testing.T) {
	srv := Start(t, Options{Env: withRegistry(t, map[string]string{"IMD_MESSAGE_SYSTEM_ACCOUNTS": "9"})})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tok := map[int64]string{}
	for _, id := range []int64{1, 2, 3, 4, 9} {
		tok[id] = srv.User(id)
	}
	c1, c2, c3, c9 := srv.Connect(ctx, tok[1], 1), srv.Connect(ctx, tok[2], 1), srv.Connect(ctx, tok[3], 1), srv.Connect(ctx, tok[9], 1)

	t.Run("P2P needs friendship", func(t *testing.T) {
		_, err := sendTo(ctx, c1, 2, "nf-1", "hi")
		assertCode(t, err, 40301)
		var asked struct {
			Friends bool `json:"friends"`
		}
		mustCall(t, srv, tok[1], "POST", "/api/v1/friends/requests", map[string]any{"user_id": 2, "message": "hi"}, &asked)
		if asked.Friends {
			t.Fatal("a request alone must not make friends")
		}
		awaitSocialEvent(t, c2, "friend", "request")
		_, err = sendTo(ctx, c1, 2, "nf-2", "hi")
		assertCode(t, err, 40301)
		mustCall(t, srv, tok[2], "POST", "/api/v1/friends/requests/1/accept", nil, nil)
		awaitSocialEvent(t, c1, "friend", "accepted")
	})

	t.Run("P2P both directions share one topic", func(t *testing.T) {
		a, err := sendTo(ctx, c1, 2, "p-1", "hello")
		if err != nil {
			t.Fatal(err)
		}
		b, err := sendTo(ctx, c2, 1, "p-2", "hello back")
		if err != nil {
			t.Fatal(err)
		}
		if a.Topic != "p2p_1_2" || b.Topic != a.Topic || b.ConversationID != a.ConversationID || b.Seq != a.Seq+1 {
			t.Fatalf("acks %+v and %+v must share one topic", a, b)
		}
	})

	t.Run("a block either way refuses both directions", func(t *testing.T) {
		for _, blocker := range []int64{2, 1} {
			other := 3 - blocker
			mustCall(t, srv, tok[blocker], "POST", "/api/v1/blocks", map[string]any{"user_id": other}, nil)
			_, err := sendTo(ctx, c1, 2, fmt.Sprint("b-", blocker, "-1"), "?")
			assertCode(t, err, 40301)
			_, err = sendTo(ctx, c2, 1, fmt.Sprint("b-", blocker, "-2"), "?")
			assertCode(t, err, 40301)
			mustCall(t, srv, tok[blocker], "DELETE", fmt.Sprint("/api/v1/blocks/", other), nil, nil)
		}
		if _, err := sendTo(ctx, c1, 2, "b-after", "unblocked"); err != nil {
			t.Fatalf("after unblocking: %v", err)
		}
	})

	topic := srv.Group(50, 1, 2, 3)
	srv.MustAdmin("PUT", "/groups/50/members/2/role", map[string]string{"role": "admin"}, nil)

	t.Run("mute-all stops members, not the owner or admins", func(t *testing.T) {
		mustCall(t, srv, tok[2], "PUT", "/api/v1/groups/50/mute_all", map[string]bool{"mute_all": true}, nil)
		_, err := c3.Send(ctx, textMessage(topic, "ma-3", "member"))
		assertCode(t, err, 40301)
		if _, err := c2.Send(ctx, textMessage(topic, "ma-2", "admin")); err != nil {
			t.Fatalf("admin: %v", err)
		}
		if _, err := c1.Send(ctx, textMessage(topic, "ma-1", "owner")); err != nil {
			t.Fatalf("owner: %v", err)
		}
		refused(t, srv, tok[3], "PUT", "/api/v1/groups/50/mute_all", map[string]bool{"mute_all": false}, 40301)
		mustCall(t, srv, tok[1], "PUT", "/api/v1/groups/50/mute_all", map[string]bool{"mute_all": false}, nil)
		if _, err := c3.Send(ctx, textMessage(topic, "ma-3b", "member again")); err != nil {
			t.Fatalf("member after mute-all: %v", err)
		}
	})

	t.Run("a member mute ends by itself", func(t *testing.T) {
		mustCall(t, srv, tok[2], "PUT", "/api/v1/groups/50/members/3/mute", map[string]int{"duration_seconds": 2}, nil)
		_, err := c3.Send(ctx, textMessage(topic, "mm-1", "muted"))
		assertCode(t, err, 40301)
		time.Sleep(2500 * time.Millisecond) // the 2 s mute runs out: time passing is what is tested
		if _, err := c3.Send(ctx, textMessage(topic, "mm-2", "free")); err != nil {
			t.Fatalf("after the mute: %v", err)
		}
	})

	t.Run("a removed member can neither send nor sync", func(t *testing.T) {
		if _, _, err := c3.SyncMessages(ctx, topic, 0, 0); err != nil {
			t.Fatalf("member sync: %v", err)
		}
		mustCall(t, srv, tok[1], "DELETE", "/api/v1/groups/50/members/3", nil, nil)
		awaitSocialEvent(t, c3, "member", "removed")
		_, err := c3.Send(ctx, textMessage(topic, "rm-1", "still here?"))
		assertCode(t, err, 40301)
		_, _, err = c3.SyncMessages(ctx, topic, 0, 0)
		assertCode(t, err, 40301)
		refused(t, srv, tok[3], "GET", "/api/v1/topics/"+topic+"/messages?since=0", nil, 40301)
	})

	t.Run("system accounts have their own switch", func(t *testing.T) {
		sys := textMessage("", "sys-1", "maintenance tonight")
		sys.ToUser, sys.Type = 4, wire.TypeSystem
		if _, err := c9.Send(ctx, sys); err != nil {
			t.Fatalf("system account to a stranger: %v", err)
		}
		sys.ToUser, sys.ClientMsgID = 2, "sys-2"
		_, err := c1.Send(ctx, sys)
		assertCode(t, err, 40301)
		if _, err := c9.Send(ctx, textMessage(topic, "sys-3", "to the group")); err != nil {
			t.Fatalf("system account into a group it is not in: %v", err)
		}
	})
}

// TestClientAPISendReachesTCP: a message sent over HTTP goes through the same send path and
// deliver queue as SEND_MESSAGE, so a TCP client receives it.
func TestClientAPISendReachesTCP(t *testing.T) {
	srv := Start(t, Options{Env: withRegistry(t, map[string]string{})})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokA, tokB := srv.User(1), srv.User(2)
	srv.MustAdmin("POST", "/friendships", map[string]int64{"user_a": 1, "user_b": 2}, nil)
	b := srv.Connect(ctx, tokB, 1)

	var ack struct {
		Topic string `json:"topic"`
		Seq   int64  `json:"seq"`
		MsgID int64  `json:"msg_id"`
	}
	body := map[string]any{"to_user": 2, "client_msg_id": "http-1", "type": "text", "content": map[string]string{"text": "from HTTP"}}
	mustCall(t, srv, tokA, "POST", "/api/v1/messages", body, &ack)
	if ack.Topic != "p2p_1_2" || ack.Seq != 1 || ack.MsgID == 0 {
		t.Fatalf("ack = %+v", ack)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case p := <-b.Pushes():
			if p.Command != wire.CmdMessage || p.Message == nil {
				continue
			}
			if p.Message.MsgID != ack.MsgID || p.Message.From != 1 || p.Message.Topic != ack.Topic {
				t.Fatalf("pushed %+v, want msg_id %d from 1", p.Message, ack.MsgID)
			}
			// A retry over HTTP is the same message.
			var again struct {
				MsgID int64 `json:"msg_id"`
			}
			mustCall(t, srv, tokA, "POST", "/api/v1/messages", body, &again)
			if again.MsgID != ack.MsgID {
				t.Fatalf("retry got msg_id %d, want %d", again.MsgID, ack.MsgID)
			}
			var page struct {
				Messages []wire.Message `json:"messages"`
			}
			mustCall(t, srv, tokB, "GET", "/api/v1/topics/p2p_1_2/messages", nil, &page)
			if len(page.Messages) != 1 || page.Messages[0].MsgID != ack.MsgID {
				t.Fatalf("history = %+v", page.Messages)
			}
			checkConversationList(t, srv, tokB, ack.Topic)
			return
		case <-deadline:
			t.Fatal("the TCP client did not receive the HTTP message")
		}
	}
}

// checkConversationList finds topic in the user's list with one unread message, then marks it
// read and pins it over HTTP.
func checkConversationList(t *testing.T, srv *Server, token, topic string) {
	t.Helper()
	type entry struct {
		ConversationID int64  `json:"conversation_id"`
		Topic          string `json:"topic"`
		Unread         int64  `json:"unread"`
		Pinned         bool   `json:"pinned"`
	}
	var list struct {
		Conversations []entry `json:"conversations"`
		Source        string  `json:"source"`
	}
	find := func() (entry, bool) {
		mustCall(t, srv, token, "GET", "/api/v1/conversations", nil, &list)
		for _, e := range list.Conversations {
			if e.Topic == topic {
				return e, true
			}
		}
		return entry{}, false
	}
	var got entry
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		e, ok := find()
		if ok && e.Unread == 1 {
			got = e
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("conversation list (%s) = %+v, want %s with 1 unread", list.Source, list.Conversations, topic)
		}
	}
	var w struct {
		Seq int64 `json:"seq"`
	}
	mustCall(t, srv, token, "POST", "/api/v1/read", map[string]any{"topic": topic, "seq": 1}, &w)
	if w.Seq != 1 {
		t.Fatalf("watermark = %+v", w)
	}
	mustCall(t, srv, token, "PUT", fmt.Sprint("/api/v1/conversations/", got.ConversationID, "/settings"), map[string]bool{"pinned": true}, nil)
	if e, ok := find(); !ok || e.Unread != 0 || !e.Pinned {
		t.Fatalf("after reading: %+v", list.Conversations)
	}
}

// TestTenantIsolation provisions a second tenant through the admin API next to the server's
// own and checks that neither tenant reaches the other's data, while both work.
func TestTenantIsolation(t *testing.T) {
	srv := Start(t, Options{Env: withRegistry(t, map[string]string{})})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other := "e2e_" + randomHex(6)
	t.Cleanup(func() { dropDatabase(RequireServices(t).MySQLDSN, "imd_"+other) })

	var created struct {
		Tenant   string `json:"tenant"`
		Database string `json:"database"`
	}
	status, e := call(t, srv, srv.AdminKey, "POST", "/admin/v1/tenants", map[string]string{"tenant": other}, &created)
	if status != http.StatusCreated || created.Database != "imd_"+other {
		t.Fatalf("provision: HTTP %d %+v %+v", status, created, e)
	}
	var list struct {
		Tenants []struct {
			Tenant string `json:"tenant"`
			Source string `json:"source"`
		} `json:"tenants"`
	}
	mustCall(t, srv, srv.AdminKey, "GET", "/admin/v1/tenants", nil, &list)
	if len(list.Tenants) != 2 {
		t.Fatalf("tenants = %+v", list.Tenants)
	}

	// Tenant B: users 1 and 2 in group 7, one message.
	inB := func(method, path string, body, out any) {
		t.Helper()
		mustCall(t, srv, srv.AdminKey, method, "/admin/v1/tenants/"+other+path, body, out)
	}
	var tokB1, tokB2 struct {
		Token string `json:"token"`
	}
	for _, id := range []int64{1, 2} {
		inB("POST", "/users", map[string]int64{"user_id": id}, nil)
	}
	inB("POST", "/tokens", map[string]int64{"user_id": 1}, &tokB1)
	inB("POST", "/tokens", map[string]int64{"user_id": 2}, &tokB2)
	inB("POST", "/groups", map[string]any{"group_id": 7, "owner": 1, "members": []int64{2}}, nil)
	b1, b2 := srv.Connect(ctx, tokB1.Token, 1), srv.Connect(ctx, tokB2.Token, 1)
	if _, err := b1.Send(ctx, textMessage("grp_7", "b-1", "tenant B secret")); err != nil {
		t.Fatalf("send in the provisioned tenant: %v", err)
	}
	if got := collectMessages(t, b2, 1, 15*time.Second); got[1] != 1 {
		t.Fatalf("the provisioned tenant's deliver workers did not deliver: %v", got)
	}

	// Tenant A: the same user ids, a group of the same id that does not exist here.
	tokA1 := srv.User(1)
	srv.User(2)
	a1 := srv.Connect(ctx, tokA1, 1)
	refused(t, srv, tokA1, "GET", "/api/v1/topics/grp_7/messages", nil, 40301)
	refused(t, srv, tokA1, "GET", "/api/v1/groups/7", nil, 40301)
	_, _, err := a1.SyncMessages(ctx, "grp_7", 0, 0)
	assertCode(t, err, 40301)
	_, err = a1.Send(ctx, textMessage("grp_7", "a-1", "into B?"))
	assertCode(t, err, 40301)
	// The admin path of A does not see B's group either.
	if status := srv.Admin("GET", "/groups/7", nil, nil); status != http.StatusNotFound {
		t.Fatalf("admin GET of B's group through A's path: HTTP %d", status)
	}
	// A token names its tenant; the admin path of another tenant cannot revoke it.
	refused(t, srv, srv.AdminKey, "POST", "/admin/v1/tenants/"+other+"/tokens/revoke", map[string]string{"token": tokA1}, 40001)
	refused(t, srv, srv.AdminKey, "GET", "/admin/v1/tenants/nosuch/groups/7", nil, 40401)
}

// TestTokenRevocation: a revoked token no longer passes the client API.
func TestTokenRevocation(t *testing.T) {
	srv := Start(t, Options{Env: withRegistry(t, map[string]string{})})
	tok := srv.User(1)
	mustCall(t, srv, tok, "GET", "/api/v1/me", nil, nil)
	srv.MustAdmin("POST", "/tokens/revoke", map[string]string{"token": tok}, nil)
	refused(t, srv, tok, "GET", "/api/v1/me", nil, 40101)

	// Every token of a user issued until now.
	fresh := srv.User(1)
	var revoked struct {
		IssuedBefore int64 `json:"issued_before"`
	}
	time.Sleep(1100 * time.Millisecond) // token times have second precision
	srv.MustAdmin("POST", "/tokens/revoke", map[string]int64{"user_id": 1}, &revoked)
	refused(t, srv, fresh, "GET", "/api/v1/me", nil, 40101)
	time.Sleep(1100 * time.Millisecond)
	later := srv.User(1)
	mustCall(t, srv, later, "GET", "/api/v1/me", nil, nil)
}

// TestProvisionedTenantReachesEveryNode: a tenant provisioned on one node is served by the
// others after their registry refresh, and by nodes that start later at once.
func TestProvisionedTenantReachesEveryNode(t *testing.T) {
	env := withRegistry(t, map[string]string{"IMD_TENANT_REGISTRY_REFRESH_INTERVAL": "200ms"})
	first := Start(t, Options{Env: env})
	secondEnv := map[string]string{"IMD_NODE_ID": "2"}
	for k, v := range env {
		secondEnv[k] = v
	}
	second := Start(t, Options{Tenant: first.Tenant, Env: secondEnv})
	other := "e2e_" + randomHex(6)
	t.Cleanup(func() { dropDatabase(RequireServices(t).MySQLDSN, "imd_"+other) })
	mustCall(t, first, first.AdminKey, "POST", "/admin/v1/tenants", map[string]string{"tenant": other}, nil)

	served := func(srv *Server) bool {
		var list struct {
			Tenants []struct {
				Tenant string `json:"tenant"`
			} `json:"tenants"`
		}
		mustCall(t, srv, srv.AdminKey, "GET", "/admin/v1/tenants", nil, &list)
		for _, ti := range list.Tenants {
			if ti.Tenant == other {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); !served(second); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second node never served the provisioned tenant")
		}
	}
	// The second node opened the tenant's database: its admin API writes there.
	mustCall(t, second, second.AdminKey, "POST", "/admin/v1/tenants/"+other+"/users", map[string]int64{"user_id": 1}, nil)

	thirdEnv := map[string]string{"IMD_NODE_ID": "3"}
	for k, v := range env {
		thirdEnv[k] = v
	}
	third := Start(t, Options{Tenant: first.Tenant, Env: thirdEnv})
	if !served(third) {
		t.Fatal("a node starting later must load the provisioned tenant at boot")
	}
	var tok struct {
		Token string `json:"token"`
	}
	mustCall(t, third, third.AdminKey, "POST", "/admin/v1/tenants/"+other+"/tokens", map[string]int64{"user_id": 1}, &tok)
	mustCall(t, third, tok.Token, "GET", "/api/v1/me", nil, nil)
}
