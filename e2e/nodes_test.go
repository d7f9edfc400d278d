package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// Several nodes of one tenant behave, to every client, like one node (issue 14, DESIGN §11).
// Nodes share the tenant's MariaDB and Redis; each has its own node_id and listeners.

// startNodes starts n nodes of one tenant with the given extra config.
func startNodes(t *testing.T, n int, env map[string]string) []*Server {
	t.Helper()
	withID := func(id int) map[string]string {
		e := map[string]string{"IMD_NODE_ID": fmt.Sprint(id)}
		for k, v := range env {
			e[k] = v
		}
		return e
	}
	nodes := []*Server{Start(t, Options{Env: withID(1)})}
	for i := 2; i <= n; i++ {
		nodes = append(nodes, Start(t, Options{Tenant: nodes[0].Tenant, Env: withID(i)}))
	}
	return nodes
}

// pushLog is what one connection received, in arrival order.
type pushLog struct {
	seqs  []int64 // MESSAGE pushes
	reads []int64 // READ_MESSAGE pushes: their watermark seq
}

// collectPushes reads c's pushes until done says enough or limit passes, then settles briefly
// so a duplicate would show.
func collectPushes(t *testing.T, c *client.Conn, limit time.Duration, done func(pushLog) bool) pushLog {
	t.Helper()
	var got pushLog
	deadline := time.After(limit)
	settle := (<-chan time.Time)(nil)
	for {
		select {
		case p, ok := <-c.Pushes():
			if !ok {
				t.Fatalf("connection closed after %d messages: %v", len(got.seqs), c.Err())
			}
			switch {
			case p.Command == wire.CmdMessage && p.Message != nil:
				got.seqs = append(got.seqs, p.Message.Seq)
			case p.Command == wire.CmdReadMessage:
				var r wire.ReadResponse
				if err := json.Unmarshal(p.Envelope.Data, &r); err != nil {
					t.Fatalf("READ push %s: %v", p.Envelope.Data, err)
				}
				got.reads = append(got.reads, r.Seq)
			}
			if settle == nil && done(got) {
				settle = time.After(500 * time.Millisecond)
			}
		case <-settle:
			return got
		case <-deadline:
			t.Fatalf("after %v: %d messages %v, reads %v", limit, len(got.seqs), got.seqs, got.reads)
		}
	}
}

// TestNodesLivePushesReachEveryNode: three nodes, a group whose members are spread over all of
// them, one sender: every member gets every message exactly once and in seq order, whichever
// node holds it and whichever took the deliver job; the sending device gets none and the
// sender's other device on another node gets all. A P2P message and a READ push cross nodes
// too.
func TestNodesLivePushesReachEveryNode(t *testing.T) {
	nodes := startNodes(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const members, each = 9, 30
	ids := make([]int64, members)
	tokens := make([]string, members)
	for i := range ids {
		ids[i] = int64(100 + i)
		tokens[i] = nodes[0].User(ids[i])
	}
	topic := nodes[0].Group(14, ids[0], ids[1:]...)
	conns := make([]*client.Conn, members)
	for i := range conns {
		conns[i] = nodes[i%len(nodes)].Connect(ctx, tokens[i], 1)
	}
	senderOther := nodes[1].Connect(ctx, tokens[0], 2) // the sender's second device, elsewhere
	for j := range each {
		if _, err := conns[0].Send(ctx, textMessage(topic, fmt.Sprintf("m%d", j), "x")); err != nil {
			t.Fatalf("send %d: %v", j, err)
		}
	}
	want := seqRange(1, each)
	enough := func(p pushLog) bool { return len(p.seqs) >= each }
	for i := 1; i < members; i++ {
		if got := collectPushes(t, conns[i], time.Minute, enough).seqs; !slices.Equal(got, want) {
			t.Errorf("member %d on node %d got %v, want every seq once in order", i, i%len(nodes)+1, got)
		}
	}
	if got := collectPushes(t, senderOther, time.Minute, enough).seqs; !slices.Equal(got, want) {
		t.Errorf("the sender's other device got %v", got)
	}
	assertNoMessage(t, conns[0], time.Second)

	// P2P from node 1 to node 2, then the recipient reads on node 2 and its other device on
	// node 3 gets the READ push.
	a, b := ids[0], ids[1]
	nodes[0].MustAdmin("POST", "/friendships", map[string]any{"user_a": a, "user_b": b}, nil)
	bOther := nodes[2].Connect(ctx, tokens[1], 2)
	ack, err := conns[0].Send(ctx, wire.SendMessageRequest{ToUser: b, ClientMsgID: "p2p-1", Type: "text", Content: []byte(`{"text":"hi"}`)})
	if err != nil {
		t.Fatalf("p2p send: %v", err)
	}
	one := func(p pushLog) bool { return len(p.seqs) >= 1 }
	if got := collectPushes(t, conns[1], time.Minute, one).seqs; !slices.Equal(got, []int64{ack.Seq}) {
		t.Errorf("p2p recipient on node 2 got %v", got)
	}
	if got := collectPushes(t, bOther, time.Minute, one).seqs; !slices.Equal(got, []int64{ack.Seq}) {
		t.Errorf("p2p recipient's other device on node 3 got %v", got)
	}
	var read wire.ReadResponse
	env, err := conns[1].Request(ctx, wire.CmdReadMessage, wire.ReadRequest{Topic: ack.Topic, Seq: ack.Seq})
	if err != nil || env.Code != 0 || json.Unmarshal(env.Data, &read) != nil {
		t.Fatalf("read: %v %+v", err, env)
	}
	if got := collectPushes(t, bOther, time.Minute, func(p pushLog) bool { return len(p.reads) >= 1 }).reads; !slices.Equal(got, []int64{ack.Seq}) {
		t.Errorf("READ push on node 3 got %v", got)
	}
}

// TestNodesSecondAuthOnAnotherNodeKicksTheFirst: PROTOCOL §3, across nodes.
func TestNodesSecondAuthOnAnotherNodeKicksTheFirst(t *testing.T) {
	nodes := startNodes(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tok := nodes[0].User(7001)
	first, otherDevice := nodes[0].Connect(ctx, tok, 1), nodes[0].Connect(ctx, tok, 2)
	second := nodes[1].Connect(ctx, tok, 1)
	transportExpectKick(t, first, wire.KickReasonReplaced)
	for name, c := range map[string]*client.Conn{"replacement": second, "other device": otherDevice} {
		if err := c.Heartbeat(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// And back: the device returns to node 1, node 2's connection is kicked.
	third := nodes[0].Connect(ctx, tok, 1)
	transportExpectKick(t, second, wire.KickReasonReplaced)
	if err := third.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestNodesKilledNodeLosesNoAckedMessage: the node that consumes the deliver queue (one
// partition, the first node in the lease order) is killed with -9 mid-load. The survivor takes
// its partition once the lease runs out, requeues the jobs it had in flight and delivers them:
// every device connected to the survivor gets every ACKed message of the others live, exactly
// once — also a job the dead node had pushed or forwarded and not yet marked done, which the
// survivor pushes again and the connection drops (pushes are at least once, docs/NODES.md) —
// the unread count counts each once, and a client of the dead node reconnects to the survivor
// and reads every ACKed message back by sync, each once.
func TestNodesKilledNodeLosesNoAckedMessage(t *testing.T) {
	nodes := startNodes(t, 2, map[string]string{"IMD_CLUSTER_LEASE_TTL": "3s", "IMD_DELIVER_PARTITIONS": "1"})
	victim, survivor := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const members, each = 6, 40
	ids := make([]int64, members)
	tokens := make([]string, members)
	for i := range ids {
		ids[i] = int64(200 + i)
		tokens[i] = victim.User(ids[i])
	}
	topic := victim.Group(15, ids[0], ids[1:]...)
	conns := make([]*client.Conn, members)
	for i := range conns {
		node := victim
		if i >= members/2 {
			node = survivor
		}
		conns[i] = node.Connect(ctx, tokens[i], 1)
	}
	observer := conns[members-1] // on the survivor, sends nothing
	var (
		mu     sync.Mutex
		acked  []int64
		sentBy = map[int64]int{} // seq → index of its sender's connection
		wg     sync.WaitGroup
	)
	killed := make(chan struct{})
	for _, i := range []int{0, members / 2} { // one sender on each node
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				if i == 0 && j == each/4 {
					victim.Kill()
					close(killed)
				}
				ack, err := conns[i].Send(ctx, textMessage(topic, fmt.Sprintf("s%d-%d", i, j), "x"))
				if err != nil {
					if i == 0 {
						return // its node is gone: what it did not get acked may or may not be stored
					}
					t.Errorf("sender on the survivor: %v", err)
					return
				}
				mu.Lock()
				acked = append(acked, ack.Seq)
				sentBy[ack.Seq] = i
				mu.Unlock()
			}
		}()
	}
	// Drain every connection of the survivor while the load runs, so no push stalls one.
	seen := map[int]map[int64]int{} // connection index → seq → pushes
	done := make(chan struct{})     // the observer's drain ended
	for i := members / 2; i < members; i++ {
		seen[i] = map[int64]int{}
		go func() {
			if i == members-1 {
				defer close(done)
			}
			for p := range conns[i].Pushes() {
				if p.Command == wire.CmdMessage && p.Message != nil {
					mu.Lock()
					seen[i][p.Message.Seq]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	<-killed
	slices.Sort(acked)
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		missing := 0
		for i, got := range seen {
			for _, s := range acked {
				if got[s] == 0 && sentBy[s] != i {
					missing++
				}
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the survivor's %d devices lack %d live pushes of %d acked messages", len(seen), missing, len(acked))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A duplicate would come from a job redelivered after the dead node's lease ran out. Once
	// the queue drained, none is left to come; a last message from a second device of another
	// survivor member reaches every survivor connection after whatever was pushed to it before
	// (a device gets a topic's pushes in seq order).
	deliveryDrained(t, survivor, time.Minute)
	last, err := survivor.Connect(ctx, tokens[members/2+1], 2).Send(ctx, textMessage(topic, "last", "x"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the last message pushed to every survivor connection", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, got := range seen {
			if got[last.Seq] == 0 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	sentBy[last.Seq] = -1
	for i, got := range seen {
		for s, n := range got {
			if n != 1 || sentBy[s] == i {
				t.Errorf("seq %d (sent by connection %d) pushed %d times to connection %d", s, sentBy[s], n, i)
			}
		}
	}
	mu.Unlock()

	// The dead node's client reconnects to the survivor and catches up by sync.
	back := survivor.Connect(ctx, tokens[1], 1)
	var stored []int64 // fewer than one page
	for _, m := range syncAll(t, ctx, back, topic) {
		stored = append(stored, m.Seq)
	}
	if !slices.IsSorted(stored) || len(slices.Compact(slices.Clone(stored))) != len(stored) {
		t.Fatalf("sync returned duplicates or disorder: %v", stored)
	}
	for _, s := range acked {
		if _, ok := slices.BinarySearch(stored, s); !ok {
			t.Errorf("acked seq %d not stored", s)
		}
	}
	var conv struct {
		ConversationID int64 `json:"conversation_id"`
	}
	survivor.MustAdmin("GET", "/topics/"+topic+"/messages/1", nil, &conv)
	if got := survivor.unreadInRedis(survivor.Redis(), ids[members-1], conv.ConversationID); got != int64(len(stored)) {
		t.Errorf("observer unread %d, %d messages stored", got, len(stored))
	}
	if !strings.Contains(survivor.Logs(), "took deliver partition") {
		t.Error("the survivor never took the dead node's deliver partition")
	}
	observer.Close()
	<-done
}

// TestNodesLogoutOnOneNodeIsRefusedByTheOther: a logout on node A is refused at once by every
// AUTH, by A's client API, and — after Redis lost the tenant's keys — by node B's client API
// at most recentRevocationTTL (5 s) after it, although B checked the token just before
// (README "Losing Redis", issue 18).
func TestNodesLogoutOnOneNodeIsRefusedByTheOther(t *testing.T) {
	const bound = 5 * time.Second // cmd/imd recentRevocationTTL
	nodes := startNodes(t, 2, nil)
	a, b := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tok, kept := a.User(7201), a.User(7202)
	for _, srv := range nodes {
		mustCall(t, srv, tok, "GET", "/api/v1/me", nil, nil) // the node remembers "not revoked"
		srv.Connect(ctx, tok, 1)
	}
	mustCall(t, a, tok, "POST", "/api/v1/logout", nil, nil)
	loggedOut := time.Now()
	a.dropTenantKeys(a.Redis())

	for i, srv := range nodes {
		c := srv.Dial(ctx)
		if _, err := c.Auth(ctx, tok, 2); !isCode(err, wire.CodeUnauthenticated) {
			t.Fatalf("AUTH on node %d with the logged-out token: %v, want 40101", i+1, err)
		}
	}
	refused(t, a, tok, "GET", "/api/v1/me", nil, 40101)
	for {
		sent := time.Now()
		status, e := call(t, b, tok, "GET", "/api/v1/me", nil, nil)
		if e.Code == 40101 {
			break
		}
		if status/100 != 2 {
			t.Fatalf("node 2 per request: HTTP %d %+v", status, e)
		}
		if sent.Sub(loggedOut) > bound {
			t.Fatalf("node 2 accepted the logged-out token in a request sent %v after the logout", sent.Sub(loggedOut))
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustCall(t, b, kept, "GET", "/api/v1/me", nil, nil)
	b.Connect(ctx, kept, 1)
}
