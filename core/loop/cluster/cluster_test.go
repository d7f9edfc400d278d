package cluster

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/loop/deliver"
	"github.com/imdhq/imd/core/usecase/inbox"
)

const tenant = "acme"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// sessions is a node's local registry: the users connected here, each with device 1.
type sessions struct {
	mu     sync.Mutex
	online map[int64]bool
	refuse map[int64]bool // connected, but their outbound queue is full
	got    []delivery.Addressed
	kicked []presence.Entry
	reason []string // of each kick
	forgot []int64  // users whose cached standing was dropped
}

func (s *sessions) ForgetUser(_ string, user int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgot = append(s.forgot, user)
}

func newSessions(users ...int64) *sessions {
	s := &sessions{online: map[int64]bool{}, refuse: map[int64]bool{}}
	for _, u := range users {
		s.online[u] = true
	}
	return s
}

func (s *sessions) Push(ctx context.Context, t string, tg delivery.Target, p delivery.Push) delivery.Report {
	return s.PushReach(ctx, t, delivery.Addressed{Target: tg, Push: p})[0].Report
}

func (s *sessions) PushReach(_ context.Context, _ string, pushes ...delivery.Addressed) []delivery.Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]delivery.Outcome, len(pushes))
	for i, a := range pushes {
		s.got = append(s.got, a)
		for _, u := range a.Target.Recipients {
			switch {
			case !s.online[u]:
				out[i].Offline++
				out[i].OfflineUsers = append(out[i].OfflineUsers, u)
			case u == a.Target.Sender && a.Target.ExcludeDevice == 1:
			case s.refuse[u]:
				out[i].Failed++
				out[i].FailedDevices = append(out[i].FailedDevices, delivery.Device{User: u, Device: 1})
			default:
				out[i].Delivered++
			}
		}
	}
	return out
}

func (s *sessions) PushDevice(_ context.Context, _ string, user int64, _ uint64, p delivery.Push) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.online[user] {
		return 0
	}
	s.got = append(s.got, delivery.Addressed{Target: delivery.Target{Recipients: []int64{user}}, Push: p})
	return 1
}

func (s *sessions) Kick(_ string, user int64, device uint64, reason string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kicked = append(s.kicked, presence.Entry{User: user, Device: device})
	s.reason = append(s.reason, reason)
	return 1
}

// node is one imd node of the test deployment.
type node struct {
	view     *View
	local    *sessions
	pusher   *Pusher
	tracker  *Tracker
	sessions *Sessions
	receiver *Receiver
	notifier *memory.Notifier
	metrics  *memory.Metrics
}

// deployment is the Redis and MySQL the nodes share.
type deployment struct {
	nodes   *memory.Nodes
	clock   *memory.Clock
	queue   *memory.DeliverQueue
	mailbox *memory.Mailbox
}

func newDeployment() *deployment {
	clock := memory.NewClock(time.Unix(1_800_000_000, 0))
	return &deployment{nodes: memory.NewNodes(time.Now), clock: clock, queue: memory.NewDeliverQueue(clock.Now), mailbox: memory.NewMailbox()}
}

// rows are the MISSED_MESSAGE rows of the user's device 1, by seq.
func (d *deployment) rows(t *testing.T, user int64) (seqs []int64) {
	t.Helper()
	events, err := d.mailbox.Since(t.Context(), tenant, user, 1, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		var m mailbox.Missed
		if e.Type != mailbox.MissedMessage || json.Unmarshal(e.Payload, &m) != nil {
			t.Fatalf("mailbox row %+v", e)
		}
		seqs = append(seqs, m.Seq)
	}
	return seqs
}

func (d *deployment) node(name string, backlog int, users ...int64) *node {
	cfg := Config{LeaseTTL: time.Second, Backlog: backlog}
	n := &node{view: NewView(name), local: newSessions(users...), notifier: memory.NewNotifier(), metrics: memory.NewMetrics()}
	mailer := inbox.NewMailer(inbox.MailerDeps{Mailbox: d.mailbox, Pusher: n.local, IDs: memory.NewIDs(d.clock), Clock: d.clock, Log: quiet})
	fallback := deliver.NewFallback(deliver.Config{}, deliver.Deps{Queue: d.queue, Mailer: mailer, Notifier: n.notifier, Metrics: n.metrics, Log: quiet})
	n.sessions = NewSessions(n.view, NewForwarder(cfg, d.nodes, d.clock, n.metrics, quiet), n.local)
	n.pusher = NewPusher(cfg, PusherDeps{Local: n.local, View: n.view, Presence: d.nodes, Channel: d.nodes, Clock: d.clock, Metrics: n.metrics, Log: quiet})
	n.tracker = NewTracker(n.view, d.nodes, NewForwarder(cfg, d.nodes, d.clock, n.metrics, quiet), nil, quiet)
	n.receiver = NewReceiver(ReceiverDeps{View: n.view, Channel: d.nodes, Local: n.local, Kicker: n.local, Users: n.local, Tracker: n.tracker,
		Fallback: fallback, Tenants: func() []string { return []string{tenant} }, Clock: d.clock, Metrics: n.metrics, Log: quiet})
	for _, u := range users {
		n.tracker.Bound(tenant, u, 1)
	}
	return n
}

// live tells every node which nodes are alive, as the Keeper's pass would.
func live(names []string, nodes ...*node) {
	for _, n := range nodes {
		n.view.set(tenant, names)
	}
}

// receive reads what is queued on n's channel, as its Receiver does.
func (d *deployment) receive(t *testing.T, n *node) int {
	t.Helper()
	msgs, err := d.nodes.Receive(t.Context(), tenant, n.view.Self(), "", 100, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		n.receiver.handle(t.Context(), tenant, m.Body)
		ids[i] = m.ID
	}
	if err := d.nodes.Remove(t.Context(), tenant, n.view.Self(), ids...); err != nil {
		t.Fatal(err)
	}
	return len(msgs)
}

func messagePush(seq int64, recipients []int64) delivery.Addressed {
	return delivery.Addressed{
		Target: delivery.Target{Recipients: recipients, Sender: 1, ExcludeDevice: 1},
		Push:   delivery.Push{Kind: delivery.KindMessage, Message: &message.Message{Topic: "grp_1", MsgID: 100 + seq, Seq: seq, From: 1}},
	}
}

func TestPusherForwardsToTheNodeHoldingEachDevice(t *testing.T) {
	d := newDeployment()
	a := d.node("1-aa", 100, 1, 2)
	b := d.node("2-bb", 100, 3, 4)
	dead := d.node("3-cc", 100, 5)
	live([]string{"1-aa", "2-bb"}, a, b) // 3-cc died; its entry is still in presence
	members := []int64{1, 2, 3, 4, 5, 6}
	outs := a.pusher.PushReach(t.Context(), tenant, messagePush(1, members), messagePush(2, members))
	for i, out := range outs {
		// Local 2, forwarded 3 and 4; 5 (dead node) and 6 (nowhere) offline; 1 sent it.
		if out.Delivered != 3 || out.Failed != 0 || !slices.Equal(out.OfflineUsers, []int64{5, 6}) || out.Offline != 2 {
			t.Errorf("push %d: %+v", i, out)
		}
	}
	if n := d.receive(t, b); n != 1 {
		t.Fatalf("node b got %d envelopes, want one for the whole pass", n)
	}
	if got := b.local.got; len(got) != 2 || !slices.Equal(got[0].Target.Recipients, []int64{3, 4}) ||
		got[0].Push.Message.Seq != 1 || got[1].Push.Message.Seq != 2 || got[1].Target.ExcludeDevice != 1 {
		t.Fatalf("node b pushed %+v", got)
	}
	if d.receive(t, dead) != 0 {
		t.Fatal("a dead node's channel got pushes")
	}
	if got := a.metrics.Count("cross_node_push_total", resultStale); got != 1 { // one lookup per pass
		t.Errorf("stale entries counted %v", got)
	}
	if got := b.metrics.Count("cross_node_push_total", resultDelivered); got != 4 {
		t.Errorf("delivered counted %v", got)
	}
}

func TestPusherDegradesToMissedWhenANodeIsBehind(t *testing.T) {
	d := newDeployment()
	a := d.node("1-aa", 1, 1)
	b := d.node("2-bb", 1, 3)
	live([]string{"1-aa", "2-bb"}, a, b)
	if out := a.pusher.PushReach(t.Context(), tenant, messagePush(1, []int64{1, 3}))[0]; out.Delivered != 1 {
		t.Fatalf("first push: %+v", out)
	}
	// b has not read its channel: it is full, and the next pass fails b's device at once.
	out := a.pusher.PushReach(t.Context(), tenant, messagePush(2, []int64{1, 3}))[0]
	if out.Failed != 1 || !slices.Equal(out.FailedDevices, []delivery.Device{{User: 3, Device: 1}}) || len(out.OfflineUsers) != 0 {
		t.Fatalf("push to a full channel: %+v", out)
	}
	if got := a.metrics.Count("cross_node_push_total", resultOverflow); got != 1 {
		t.Errorf("overflow counted %v", got)
	}
}

func TestReceiverRecordsMissedAndSurvivesGarbage(t *testing.T) {
	d := newDeployment()
	a := d.node("1-aa", 100, 1)
	b := d.node("2-bb", 100, 3, 4)
	live([]string{"1-aa", "2-bb"}, a, b)
	b.local.refuse[4] = true
	for _, body := range []string{"", "{", `{"kind":"pushes","sets":[],"pushes":[{"set":3,"kind":"message"}]}`,
		`{"kind":"pushes","sets":[[3]],"pushes":[{"set":0,"kind":"message"}]}`, `{"kind":"kick"}`, `{"kind":"what"}`} {
		if _, err := d.nodes.Send(t.Context(), tenant, "2-bb", 100, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	np := messagePush(7, []int64{1, 3, 4})
	np.Target.NotMailbox = true
	a.pusher.PushReach(t.Context(), tenant, messagePush(6, []int64{1, 3, 4}), np)
	d.receive(t, b)
	if got := b.metrics.Count("cross_node_push_total", resultMalformed); got != 6 {
		t.Errorf("malformed counted %v, want 6", got)
	}
	if got := d.rows(t, 4); !slices.Equal(got, []int64{6}) {
		t.Errorf("missed rows of user 4 for seqs %v, want 6 only (seq 7 is NotMailbox)", got)
	}
}

// A push that fails on the node that received it gets what a local failure gets: its row and
// one system push, none for a muted user or a job that says NotPush, once per job however often
// it is handed over; an envelope of an older node (no notify field) gets its row only.
func TestReceiverFailureGetsTheRowAndSystemPushOfALocalFailure(t *testing.T) {
	d := newDeployment()
	a := d.node("1-aa", 100, 1)
	b := d.node("2-bb", 100, 3, 4, 5)
	live([]string{"1-aa", "2-bb"}, a, b)
	b.local.refuse[3], b.local.refuse[4], b.local.refuse[5] = true, true, true
	members := []int64{1, 3, 4, 5}
	muted := messagePush(1, members)
	muted.Target.Muted = map[int64]bool{4: true}
	notPush := messagePush(2, members)
	notPush.Target.NotPush = true
	a.pusher.PushReach(t.Context(), tenant, muted, notPush)
	// The job's consumer died before its done mark: the node taking it over hands it again.
	a.pusher.PushReach(t.Context(), tenant, muted)
	d.receive(t, b)
	older := `{"kind":"pushes","sets":[[5]],"pushes":[{"set":0,"sender":1,"kind":"message","message":{"topic":"grp_1","msg_id":103,"seq":3,"from":1}}]}`
	if _, err := d.nodes.Send(t.Context(), tenant, "2-bb", 100, []byte(older)); err != nil {
		t.Fatal(err)
	}
	d.receive(t, b)
	for user, want := range map[int64][]int64{3: {1, 2}, 4: {1, 2}, 5: {1, 2, 3}} {
		if got := d.rows(t, user); !slices.Equal(got, want) {
			t.Errorf("missed rows of user %d for seqs %v, want %v", user, got, want)
		}
	}
	if got := b.notifier.Users(); len(got) != 1 || !slices.Equal(got[0], []int64{3, 5}) {
		t.Errorf("system pushes %v, want one to users 3 and 5 (4 muted seq 1, seq 2 is NotPush, seq 3 from an older node)", got)
	}
	if got := b.metrics.Count("deliver_notify_total", "ok"); got != 1 {
		t.Errorf("deliver_notify_total{ok} %v, want 1", got)
	}
	if got := b.metrics.Count("deliver_mailbox_total", "ok"); got != 7 {
		t.Errorf("deliver_mailbox_total{ok} %v, want 7", got)
	}
}

func TestTrackerKicksTheOlderConnectionOnAnotherNode(t *testing.T) {
	d := newDeployment()
	a := d.node("1-aa", 100, 7)
	b := d.node("2-bb", 100)
	live([]string{"1-aa", "2-bb"}, a, b)
	b.tracker.Bound(tenant, 7, 1)
	d.receive(t, a)
	if !slices.Equal(a.local.kicked, []presence.Entry{{User: 7, Device: 1}}) {
		t.Fatalf("node a kicked %+v", a.local.kicked)
	}
	// a's connection closes: its removal leaves b's entry.
	a.tracker.Unbound(tenant, 7, 1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	a.tracker.Run(ctx) // writes what is queued, then returns
	got, err := d.nodes.Lookup(t.Context(), tenant, []int64{7})
	if err != nil || len(got) != 1 || got[0].Node != "2-bb" {
		t.Fatalf("presence after the kick: %+v %v", got, err)
	}
	// A kick for a connection a no longer holds (it reconnected here since) is ignored.
	a.tracker.Bound(tenant, 8, 1)
	if _, err := d.nodes.Send(t.Context(), tenant, "1-aa", 100, []byte(`{"kind":"kick","user":8,"device":1,"token":999}`)); err != nil {
		t.Fatal(err)
	}
	d.receive(t, a)
	if len(a.local.kicked) != 1 {
		t.Fatalf("a stale kick closed a connection: %+v", a.local.kicked)
	}
}

// TestEndUserForgetsAndKicksOnEveryLiveNode: ending a user's sessions drops the node's own
// cached standing at once and reaches every live node's channel, the calling node's too; each
// Receiver forgets the user and KICKs all its devices with the reason. A node whose channel
// does not take the envelope is named in the error (DESIGN §8.1).
func TestEndUserForgetsAndKicksOnEveryLiveNode(t *testing.T) {
	d := newDeployment()
	a, b, c := d.node("1-aa", 100, 7), d.node("2-bb", 100, 7), d.node("3-cc", 100, 7)
	live([]string{"1-aa", "2-bb"}, a, b)
	if err := a.sessions.EndUser(t.Context(), tenant, 7, "disabled"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.local.forgot, []int64{7}) || len(a.local.kicked) != 0 {
		t.Fatalf("before its channel is read, node a forgot %v and kicked %v; want 7 forgotten at once", a.local.forgot, a.local.kicked)
	}
	for _, n := range []*node{a, b} {
		if got := d.receive(t, n); got != 1 {
			t.Fatalf("node %s got %d envelopes, want 1", n.view.Self(), got)
		}
		if !slices.Contains(n.local.forgot, 7) || !slices.Equal(n.local.kicked, []presence.Entry{{User: 7, Device: 0}}) ||
			!slices.Equal(n.local.reason, []string{"disabled"}) {
			t.Fatalf("node %s forgot %v, kicked %v for %v; want user 7, every device, disabled", n.view.Self(), n.local.forgot, n.local.kicked, n.local.reason)
		}
	}
	if got := d.receive(t, c); got != 0 {
		t.Fatalf("a node not live got %d envelopes", got)
	}

	// c is live now, but its channel is as long as a's forwarder allows (backlog 100).
	live([]string{"1-aa", "2-bb", "3-cc"}, a)
	for range 100 {
		if _, err := d.nodes.Send(t.Context(), tenant, "3-cc", 100, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.sessions.EndUser(t.Context(), tenant, 7, "deleted"); err == nil || !strings.Contains(err.Error(), "3-cc") {
		t.Fatalf("EndUser with node 3-cc's channel full: %v, want an error naming it", err)
	}
}

func TestKeepersSplitPartitionsAndTakeOverFromAStoppedNode(t *testing.T) {
	d := newDeployment()
	q, err := memory.NewDeliverQueue(time.Now).WithPartitions(4)
	if err != nil {
		t.Fatal(err)
	}
	keeper := func(name string) *Keeper {
		return NewKeeper(Config{LeaseTTL: 300 * time.Millisecond}, KeeperDeps{View: NewView(name), Nodes: d.nodes, Leases: q,
			Tenants: func() []string { return []string{tenant} }, Log: quiet})
	}
	k1, k2 := keeper("1-aa"), keeper("2-bb")
	if err := k1.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := k2.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer k1.Stop(context.Background())
	held := func(k *Keeper) (ps []int) {
		for p := range 4 {
			if k.Holds(tenant, p) {
				ps = append(ps, p)
			}
		}
		return ps
	}
	eventually(t, func() bool {
		// k1 took all four first and gives the surplus back at its consumers' safe point.
		for p := range 4 {
			if k1.Surplus(tenant, p) {
				k1.Yield(t.Context(), tenant, p)
			}
		}
		h1, h2 := held(k1), held(k2)
		return len(h1) == 2 && len(h2) == 2 && !slices.ContainsFunc(h1, func(p int) bool { return slices.Contains(h2, p) })
	})
	if k1.Alone(tenant) {
		t.Fatal("k1 thinks it is alone")
	}
	if err := k2.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { return len(held(k1)) == 4 && k1.Alone(tenant) })
}

func eventually(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Loops hold the partitions from Start on and, at Stop, write the presence removals still
// queued before they give the partitions up.
func TestLoopsStartHoldingAndStopAfterTheRemovals(t *testing.T) {
	d := newDeployment()
	q, err := memory.NewDeliverQueue(time.Now).WithPartitions(2)
	if err != nil {
		t.Fatal(err)
	}
	n := d.node("1-aa", 10, 7)
	k := NewKeeper(Config{LeaseTTL: 300 * time.Millisecond}, KeeperDeps{View: n.view, Nodes: d.nodes, Leases: q,
		Tenants: func() []string { return []string{tenant} }, Log: quiet})
	loops := NewLoops(k, n.tracker, n.receiver)
	if err := loops.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !k.Holds(tenant, 0) || !k.Holds(tenant, 1) {
		t.Fatal("a partition not held once Start returned")
	}
	// Claimed while running; released only by the removal written at Stop at the latest.
	n.tracker.Bound(tenant, 7, 1)
	eventually(t, func() bool { return len(d.lookup(t, 7)) == 1 })
	n.tracker.Unbound(tenant, 7, 1)
	if err := loops.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := d.lookup(t, 7); len(got) != 0 {
		t.Errorf("presence after Stop: %+v", got)
	}
	if k.Holds(tenant, 0) || k.Holds(tenant, 1) {
		t.Error("a partition still held after Stop")
	}
}

func (d *deployment) lookup(t *testing.T, user int64) []presence.Entry {
	t.Helper()
	got, err := d.nodes.Lookup(t.Context(), tenant, []int64{user})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A registry loss under running nodes (DESIGN §13 "After a registry loss"): all of it, as
// FLUSHALL does, which the next renewal finds by the lease lapsed, or the last claims, as a
// failover to a lagging replica does, which the lineage tells. Each Keeper then claims its
// connected devices again, so they have entries on live nodes once more; a device that left
// during the loss, or while its entry was being written, stays gone, one whose release the
// failover lost is removed, and one claimed since by another node keeps that node's entry.
func TestKeepersRestoreTheirDevicesAfterARegistryLoss(t *testing.T) {
	for _, loss := range []struct {
		name string
		lose func(t *testing.T, d *deployment, lineage *memory.RedisLineage)
	}{
		{"flushall", func(_ *testing.T, d *deployment, _ *memory.RedisLineage) { d.nodes.Lose() }},
		{"stale replica", func(t *testing.T, d *deployment, lineage *memory.RedisLineage) {
			for _, u := range []int64{7, 8} { // their claims had not reached the replica
				for _, e := range d.lookup(t, u) {
					if err := d.nodes.Release(t.Context(), tenant, e); err != nil {
						t.Fatal(err)
					}
				}
			}
			// User 12 left node 2 before the failover; the release had not reached the replica.
			if _, _, err := d.nodes.Claim(t.Context(), tenant, presence.Entry{User: 12, Device: 1, Node: "2-bb", Token: 99}); err != nil {
				t.Fatal(err)
			}
			lineage.Replace()
		}},
	} {
		t.Run(loss.name, func(t *testing.T) {
			d := newDeployment()
			q, err := memory.NewDeliverQueue(time.Now).WithPartitions(2)
			if err != nil {
				t.Fatal(err)
			}
			lineage := memory.NewRedisLineage()
			a, b := d.node("1-aa", 10, 7), d.node("2-bb", 10, 8, 9, 10, 11)
			// User 11 disconnects while node 2 writes its entry, after its removal was written.
			b.tracker.presence = restoring{d.nodes, sync.OnceFunc(func() {
				b.tracker.Unbound(tenant, 11, 1)
				b.tracker.apply(t.Context(), <-b.tracker.pending)
			})}
			keeper := func(n *node) *Keeper {
				return NewKeeper(Config{LeaseTTL: time.Minute}, KeeperDeps{View: n.view, Nodes: d.nodes, Leases: q, Held: n.tracker,
					Lineage: lineage, Tenants: func() []string { return []string{tenant} }, Log: quiet})
			}
			ka, kb := keeper(a), keeper(b)
			ctx := t.Context()
			for range 2 {
				ka.pass(ctx)
				kb.pass(ctx)
			}

			loss.lose(t, d, lineage)
			b.tracker.Unbound(tenant, 9, 1)
			b.tracker.apply(ctx, <-b.tracker.pending) // left during the loss
			a.tracker.Bound(tenant, 10, 1)            // moved from node 2 to node 1 during the loss
			for range 2 {                             // the second round: each node sees the other's renewed lease
				ka.pass(ctx)
				kb.pass(ctx)
			}
			for _, n := range []*node{a, b} { // the removals the restores queued
				for len(n.tracker.pending) > 0 {
					n.tracker.apply(ctx, <-n.tracker.pending)
				}
			}

			for _, c := range []struct {
				user int64
				node string // "": no entry
			}{{7, "1-aa"}, {8, "2-bb"}, {9, ""}, {10, "1-aa"}, {11, ""}, {12, ""}} {
				got := d.lookup(t, c.user)
				switch {
				case c.node == "" && len(got) != 0:
					t.Errorf("user %d left but has %+v", c.user, got)
				case c.node != "" && (len(got) != 1 || got[0].Node != c.node || !a.view.Live(tenant, got[0].Node)):
					t.Errorf("user %d: entries %+v, want one on live node %s", c.user, got, c.node)
				}
			}
		})
	}
}

// restoring is a registry whose Restore runs before first: what happens on the node between
// the Tracker's look at its devices and the write.
type restoring struct {
	*memory.Nodes
	before func()
}

func (r restoring) Restore(ctx context.Context, tenant string, entries []presence.Entry) (int, error) {
	r.before()
	return r.Nodes.Restore(ctx, tenant, entries)
}

// heals records what Keeper tells Changes of heals; the rest of Changes is not used here.
type heals struct {
	Changes
	mu   sync.Mutex
	told [][]int64
}

// Healed records the passes that named users: the others only release waiting changes.
func (h *heals) Healed(_ context.Context, _ string, users []int64) {
	if len(users) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.told = append(h.told, users)
}

// TestKeeperTellsOfTheHealOnce (DESIGN §13 "Unknown until healed"): after a flush the
// registry is not whole until a lease after the loss, then the keeper names the users
// connected here once, so their state is pushed once.
func TestKeeperTellsOfTheHealOnce(t *testing.T) {
	const ttl = 300 * time.Millisecond
	d := newDeployment()
	q, err := memory.NewDeliverQueue(time.Now).WithPartitions(1)
	if err != nil {
		t.Fatal(err)
	}
	n := d.node("1-aa", 10, 7, 8)
	told := &heals{}
	k := NewKeeper(Config{LeaseTTL: ttl}, KeeperDeps{View: n.view, Nodes: d.nodes, Leases: q, Held: n.tracker, Changes: told,
		Tenants: func() []string { return []string{tenant} }, Log: quiet})
	ctx := t.Context()
	whole := func(want bool, step string) {
		t.Helper()
		if _, got, err := d.nodes.LookupWhole(ctx, tenant, nil); err != nil || got != want {
			t.Fatalf("%s: whole %v, %v; want %v", step, got, err, want)
		}
	}
	k.pass(ctx)
	k.pass(ctx)
	whole(true, "a new deployment")

	d.nodes.Lose()
	whole(false, "flushed")
	k.pass(ctx) // the lease lapsed: the devices are claimed again, the heal runs a lease
	whole(false, "right after the restore")
	if got := d.lookup(t, 7); len(got) != 1 {
		t.Fatalf("user 7 not claimed again: %+v", got)
	}
	healed := time.Now()
	for passes := 0; passes < 4 || len(told.told) == 0 && time.Since(healed) < 20*ttl; passes++ {
		time.Sleep(ttl / 4) // renewed within its lease, as the keeper's ticker does
		k.pass(ctx)
	}
	whole(true, "a lease after the loss")
	k.pass(ctx)
	if len(told.told) != 1 || !slices.Equal(told.told[0], []int64{7, 8}) {
		t.Fatalf("keeper told of heals %v; want once, users 7 and 8", told.told)
	}
}
