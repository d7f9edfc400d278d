package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// notifications is a system-push webhook that keeps who each message was announced to.
type notifications struct {
	mu    sync.Mutex
	users map[int64][]int64 // msg_id → users, one entry per notification
}

func (n *notifications) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var note struct {
		Users []int64 `json:"users"`
		MsgID int64   `json:"msg_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&note); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n.mu.Lock()
	n.users[note.MsgID] = append(n.users[note.MsgID], note.Users...)
	n.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// times counts the notifications of msg that named user.
func (n *notifications) times(msg, user int64) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, u := range n.users[msg] {
		if u == user {
			c++
		}
	}
	return c
}

// TestNodesRefusedPushGetsItsRowAndSystemPushOnEveryNode: members whose connections stop
// reading sit on both nodes, so whichever node consumes the topic, one pair is local to it and
// one is reached through the other node's channel. A push refused by a full outbound queue
// leaves a MISSED_MESSAGE row and one system push per message, none for a member who muted the
// conversation, on the receiving node exactly as on the consuming one.
func TestNodesRefusedPushGetsItsRowAndSystemPushOnEveryNode(t *testing.T) {
	hook := &notifications{users: map[int64][]int64{}}
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(hookSrv.Close)
	// A PUSH_ACK timeout far away: every row here is a refused push, not an unacknowledged one.
	nodes := startNodes(t, 2, map[string]string{
		"IMD_PUSH_WEBHOOK": hookSrv.URL + "/push", "IMD_TCP_OUTBOUND_LIMIT": "8", "IMD_TCP_PUSH_ACK_TIMEOUT": "10m",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const sender = 4301
	// On each node: a member who gets system pushes and one who muted the conversation.
	type pair struct{ notified, muted int64 }
	pairs := []pair{{4302, 4303}, {4304, 4305}}
	tokens := map[int64]string{sender: nodes[0].User(sender)}
	for _, p := range pairs {
		tokens[p.notified], tokens[p.muted] = nodes[0].User(p.notified), nodes[0].User(p.muted)
	}
	topic := nodes[0].Group(43, sender, 4302, 4303, 4304, 4305)
	from := nodes[0].Connect(ctx, tokens[sender], 1)
	first, err := from.Send(ctx, textMessage(topic, "hello", "before anyone reads"))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pairs {
		nodes[0].MustAdmin("PUT", fmt.Sprintf("/users/%d/dialogs/%d", p.muted, first.ConversationID), map[string]bool{"muted": true}, nil)
		dialUnreading(t, ctx, nodes[i], tokens[p.notified], 1)
		dialUnreading(t, ctx, nodes[i], tokens[p.muted], 1)
	}

	db := nodes[0].TenantDB()
	missed := func(user int64) []int64 {
		rows, err := db.QueryContext(ctx, "SELECT payload FROM t_mailbox_events WHERE user_id = ? AND device_id = 1 AND event_type = 5", user)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var msgs []int64
		for rows.Next() {
			var payload []byte
			var row struct {
				MsgID int64 `json:"msg_id"`
			}
			if err := rows.Scan(&payload); err != nil || json.Unmarshal(payload, &row) != nil {
				t.Fatalf("mailbox row %q: %v", payload, err)
			}
			msgs = append(msgs, row.MsgID)
		}
		return msgs
	}
	everyoneMissed := func() bool {
		for _, p := range pairs {
			if len(missed(p.notified)) == 0 || len(missed(p.muted)) == 0 {
				return false
			}
		}
		return true
	}
	failedAcross := func() (n float64) {
		for _, node := range nodes {
			n += node.metricValue("cross_node_push_total", "result", "failed")
		}
		return n
	}
	// 32 KiB of random text (pushes are compressed) until both pairs' queues overflowed.
	random := make([]byte, 24<<10)
	_, _ = rand.Read(random)
	text := base64.StdEncoding.EncodeToString(random)
	for i := 0; !everyoneMissed() || failedAcross() == 0; i++ {
		if i == 100 {
			t.Fatalf("%d pushes of 32 KiB to connections that read nothing: rows %v %v %v %v, cross-node failures %v", i*10,
				missed(4302), missed(4303), missed(4304), missed(4305), failedAcross())
		}
		for j := range 10 {
			if _, err := from.Send(ctx, textMessage(topic, fmt.Sprintf("big-%d-%d", i, j), text)); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
	}
	for i, node := range nodes {
		if node.metricValue("cross_node_push_total", "result", "failed") > 0 {
			eventually(t, 30*time.Second, fmt.Sprintf("node %d, receiving, counts its system pushes", i+1), func() bool {
				return node.metricValue("deliver_notify_total", "status", "ok") > 0
			})
		}
	}
	for _, p := range pairs {
		for _, msg := range missed(p.notified) {
			eventually(t, 30*time.Second, fmt.Sprintf("a system push to %d for msg %d", p.notified, msg), func() bool {
				return hook.times(msg, p.notified) > 0
			})
		}
	}
	handOffsDone(t, 30*time.Second, nodes...) // a second notification would have been posted by now
	for _, p := range pairs {
		for _, msg := range missed(p.notified) {
			if n := hook.times(msg, p.notified); n != 1 {
				t.Errorf("user %d was told of msg %d %d times, want once", p.notified, msg, n)
			}
		}
		for _, msg := range missed(p.muted) {
			if n := hook.times(msg, p.muted); n != 0 {
				t.Errorf("user %d muted the conversation and was told of msg %d %d times", p.muted, msg, n)
			}
		}
	}
}
