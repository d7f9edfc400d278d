package e2e

// A rolling restart behind a real L4 balancer (issue 33 item 1): three nodes behind HAProxy
// with /readyz health checks, SDK clients (Go over TCP, one JavaScript over WebSocket) spread
// over them through it, group and P2P senders in closed loops; each node is stopped with
// SIGTERM and started again in turn, then the same with kill -9. Users lose a connection, never a message: every acknowledged message stored
// once, every device ends with every message of its conversations (live or by the SDK's
// catch-up), no send refused. A stopping node fails /readyz, waits out its unready grace, and
// drains its clients over its drain window; the reconnect rate the other nodes take is logged
// (docs/NODES.md "Rolling restarts").

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// rollingGrace and rollingDrain are the stopping node's shutdown.unready_grace and
// shutdown.drain_window: the grace outlasts HAProxy's two failed checks several times over.
const (
	rollingGrace = time.Second
	rollingDrain = 2 * time.Second
)

// rollingDevice is one user's device, a Go SDK client or a JavaScript SDK one, and what it
// was given.
type rollingDevice struct {
	user   int64
	topics []string       // where it is a member
	c      *client.Client // nil for the JavaScript client

	mu         sync.Mutex
	got        map[string]bool // topic/seq
	duplicates int
	connects   int
	kicks      map[string]int // KICK reason → count
}

func newRollingDevice(user int64, topics ...string) *rollingDevice {
	return &rollingDevice{user: user, topics: topics, got: map[string]bool{}, kicks: map[string]int{}}
}

func (d *rollingDevice) message(topic string, seq int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := fmt.Sprintf("%s/%d", topic, seq)
	if d.got[k] {
		d.duplicates++
	}
	d.got[k] = true
}

func (d *rollingDevice) connected() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.connects++
}

func (d *rollingDevice) kicked(reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.kicks[reason]++
}

// watch records the Go client's events.
func (d *rollingDevice) watch() {
	for e := range d.c.Events() {
		switch e.Kind {
		case client.EventMessage:
			d.message(e.Message.Topic, e.Message.Seq)
		case client.EventConnected:
			d.connected()
		case client.EventPush:
			var k wire.Kick
			if e.Push.Command == wire.CmdKick && json.Unmarshal(e.Push.Envelope.Data, &k) == nil {
				d.kicked(k.Reason)
			}
		}
	}
}

// startJSDevice runs one JavaScript SDK client under Node (e2e/testdata/jsclient.mjs, on the
// ws package's WebSocket, which Debian 12's Node 18 lacks) on url and records what it prints.
// Node and ws come from deploy/local/node.sh: installed when IMD_REQUIRE_SERVICES=1 (as CI
// runs, as root), and the test fails when they cannot be; elsewhere a machine without Node
// skips the test.
func startJSDevice(t *testing.T, url, token string, d *rollingDevice) {
	t.Helper()
	script := filepath.Join(repoRoot(), "deploy", "local", "node.sh")
	required := os.Getenv("IMD_REQUIRE_SERVICES") == "1"
	verb := "path"
	if required {
		verb = "up"
	}
	out, err := exec.Command("bash", script, verb).Output()
	if err != nil {
		if required {
			t.Fatalf("deploy/local/node.sh up: %v", err)
		}
		t.Skip("node not installed: deploy/local/node.sh up (as root) installs it")
	}
	node := strings.TrimSpace(string(out))
	deps := exec.Command("bash", script, "deps")
	deps.Stderr = os.Stderr
	if err := deps.Run(); err != nil {
		t.Fatalf("deploy/local/node.sh deps (the ws package of the JavaScript client): %v", err)
	}
	cmd := exec.Command(node, filepath.Join(repoRoot(), "e2e", "testdata", "jsclient.mjs"))
	cmd.Env = append(os.Environ(), "IMD_JS_URL="+url, "IMD_JS_TOKEN="+token, fmt.Sprint("IMD_JS_DEVICE=", 1))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the JavaScript client: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = stdin.Close() // it closes its client and exits
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	go func() {
		defer close(done)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			f := strings.Fields(lines.Text())
			switch {
			case len(f) == 3 && f[0] == "message":
				seq, _ := strconv.ParseInt(f[2], 10, 64)
				d.message(f[1], seq)
			case len(f) == 2 && f[0] == "kick":
				d.kicked(f[1])
			case len(f) == 2 && f[0] == "state" && f[1] == "open":
				d.connected()
			case len(f) > 0 && f[0] == "error":
				t.Logf("JavaScript client: %s", lines.Text())
			}
		}
		_ = cmd.Wait()
	}()
}

// rollingSent is an acknowledged send and its sender.
type rollingSent struct {
	acked
	from int64
}

// rollingLoad is the closed-loop senders: each sends, waits for the ACK (the SDK resends
// across reconnects with the same client_msg_id), pauses, sends the next.
type rollingLoad struct {
	mu     sync.Mutex
	sent   []rollingSent
	errors []error
	wg     sync.WaitGroup
	stop   chan struct{}
}

// pace keeps the load at a level a shared 2-core machine carries beside three nodes.
const rollingPace = 100 * time.Millisecond

func (l *rollingLoad) sender(ctx context.Context, d *rollingDevice, topic string, toUser int64) {
	l.wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-time.After(rollingPace):
			}
			cmid := fmt.Sprintf("r%d-%d", d.user, i)
			text := "rolling " + cmid
			req := textMessage(topic, cmid, text)
			if toUser != 0 {
				req.Topic, req.ToUser = "", toUser
			}
			ack, err := d.c.Send(ctx, req)
			l.mu.Lock()
			if err != nil {
				l.errors = append(l.errors, fmt.Errorf("user %d send %s: %w", d.user, cmid, err))
				l.mu.Unlock()
				return
			}
			l.sent = append(l.sent, rollingSent{acked{topic: ack.Topic, clientMsgID: cmid, text: text, seq: ack.Seq, msgID: ack.MsgID}, d.user})
			l.mu.Unlock()
		}
	})
}

func TestRollingRestartBehindHAProxyLosesNothing(t *testing.T) {
	svc := RequireServices(t)
	nodes := startNodes(t, 3, map[string]string{
		"IMD_SHUTDOWN_UNREADY_GRACE": rollingGrace.String(), "IMD_SHUTDOWN_DRAIN_WINDOW": rollingDrain.String(),
		// A killed node's deliver partitions move to the others soon.
		"IMD_CLUSTER_LEASE_TTL": "3s",
	})
	lb := StartHAProxy(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// A group of 12 Go clients (4 of them send) and a JavaScript one, and 4 friend pairs (one
	// sender each way in two of them).
	const groupSize, pairs = 12, 4
	first := nodes[0]
	tokens := map[int64]string{}
	var devices []*rollingDevice
	device := func(user int64, topics ...string) *rollingDevice {
		tokens[user] = first.User(user)
		c, err := client.Connect(ctx, client.Config{
			Dial:  client.Dialer(client.Options{Addr: lb.TCPAddr, DialTimeout: 5 * time.Second, RequestTimeout: 10 * time.Second}),
			Token: client.StaticToken(tokens[user]), DeviceID: 1, Heartbeat: 5 * time.Second,
		})
		if err != nil {
			t.Fatalf("connect user %d through haproxy: %v", user, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		d := newRollingDevice(user, topics...)
		d.c = c
		go d.watch()
		devices = append(devices, d)
		return d
	}
	members := make([]int64, groupSize+1) // the last one on the JavaScript SDK, over WebSocket
	for i := range members {
		members[i] = int64(3301 + i)
		tokens[members[i]] = first.User(members[i])
	}
	group := first.Group(33, members[0], members[1:]...)
	js := newRollingDevice(members[groupSize], group)
	startJSDevice(t, "ws://"+lb.HTTPAddr+"/ws", tokens[js.user], js)
	devices = append(devices, js)
	eventually(t, 30*time.Second, "the JavaScript client connected", func() bool {
		js.mu.Lock()
		defer js.mu.Unlock()
		return js.connects > 0
	})
	members = members[:groupSize]
	// Every device is connected before the first send: what a device's first AUTH finds is
	// history to it, not something to catch up.
	var senders []func(*rollingLoad)
	for i, u := range members {
		d := device(u, group)
		if i < 4 {
			senders = append(senders, func(l *rollingLoad) { l.sender(ctx, d, group, 0) })
		}
	}
	for p := range pairs {
		a, b := int64(3401+2*p), int64(3402+2*p)
		tokens[a], tokens[b] = first.User(a), first.User(b)
		mustCall(t, first, tokens[a], "POST", "/api/v1/friends/requests", map[string]any{"user_id": b, "message": "hi"}, nil)
		mustCall(t, first, tokens[b], "POST", fmt.Sprintf("/api/v1/friends/requests/%d/accept", a), nil, nil)
		topic := fmt.Sprintf("p2p_%d_%d", a, b)
		da, db := device(a, topic), device(b, topic)
		senders = append(senders, func(l *rollingLoad) { l.sender(ctx, da, "", b) })
		if p < 2 {
			senders = append(senders, func(l *rollingLoad) { l.sender(ctx, db, "", a) })
		}
	}
	load := &rollingLoad{stop: make(chan struct{})}
	for _, start := range senders {
		start(load)
	}
	settle := func() {
		// The load runs on all three nodes for a while between two stops.
		time.Sleep(time.Second)
	}
	settle()

	type rate struct {
		name              string
		per100ms, perSec  int
		toStopping, fails int
		took              time.Duration
	}
	var rates []rate
	for _, round := range []struct {
		name string
		stop func(*Server)
	}{
		{"SIGTERM", (*Server).Stop},
		{"kill -9", func(s *Server) { s.Kill(); time.Sleep(time.Second) }}, // down a while, as a crashed node is
	} {
		for i, n := range nodes {
			name := fmt.Sprintf("n%d", i+1)
			began := time.Now()
			round.stop(n)
			stopped := time.Now()
			n.Restart()
			ready := time.Now()
			r := rate{name: round.name + " " + name, took: stopped.Sub(began)}
			r.per100ms, r.perSec = peakRate(lb.Connects(), name, began, ready)
			// What the balancer still sent the stopping node once its grace had passed, and
			// the connects that failed meanwhile (no retries: each cost a client a backoff).
			for _, c := range lb.Connects() {
				if c.at.Before(began) || c.at.After(ready) {
					continue
				}
				if c.server == name && c.at.After(began.Add(rollingGrace)) && c.at.Before(stopped) {
					r.toStopping++
				}
				if c.failed {
					r.fails++
				}
			}
			rates = append(rates, r)
			settle()
		}
	}
	close(load.stop)
	load.wg.Wait()
	for _, r := range rates {
		t.Logf("%-12s stop took %v; the other nodes took at most %d reconnects in 100 ms, %d in 1 s; %d connects to the stopping node after its grace, %d failed connects",
			r.name, r.took.Round(time.Millisecond), r.per100ms, r.perSec, r.toStopping, r.fails)
	}
	for _, err := range load.errors {
		t.Errorf("a send failed (only 50301 and reconnects may happen, and the SDK retries both): %v", err)
	}
	if len(load.sent) < 100 {
		t.Fatalf("only %d sends acknowledged: the load did not run", len(load.sent))
	}

	// Every device ends with every message of its conversations but its own, once.
	for _, n := range nodes {
		deliveryDrained(t, n, time.Minute)
	}
	missing := func(d *rollingDevice) []string {
		d.mu.Lock()
		defer d.mu.Unlock()
		var out []string
		for _, s := range load.sent {
			k := fmt.Sprintf("%s/%d", s.topic, s.seq)
			if s.from != d.user && slices.Contains(d.topics, s.topic) && !d.got[k] {
				out = append(out, k)
			}
		}
		return out
	}
	deadline := time.Now().Add(time.Minute)
	for _, d := range devices {
		for len(missing(d)) > 0 && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if m := missing(d); len(m) > 0 {
			t.Errorf("user %d lacks %d acknowledged messages: %v", d.user, len(m), m[:min(len(m), 10)])
		}
	}
	connects, kicks := 0, map[string]int{}
	for _, d := range devices {
		d.mu.Lock()
		if d.duplicates > 0 {
			t.Errorf("user %d was given %d messages twice", d.user, d.duplicates)
		}
		connects += d.connects
		for reason, k := range d.kicks {
			kicks[reason] += k
		}
		d.mu.Unlock()
	}
	t.Logf("%d sends acknowledged; %d devices connected %d times; KICKs %v", len(load.sent), len(devices), connects, kicks)
	if kicks["shutdown"] == 0 {
		t.Error("no client was told KICK shutdown: the SIGTERM round did not drain")
	}
	checkAcked(t, svc.MySQLDSN, first.Tenant, ackedOf(load.sent))
	// No durable write a shutdown started was cut short.
	for i, n := range nodes {
		for _, lost := range []string{"missed-message rows not written", "unacknowledged pushes not recorded"} {
			if strings.Contains(n.Logs(), lost) {
				t.Errorf("node %d logged %q", i+1, lost)
			}
		}
	}
}

func ackedOf(sent []rollingSent) []acked {
	out := make([]acked, len(sent))
	for i, s := range sent {
		out[i] = s.acked
	}
	return out
}
