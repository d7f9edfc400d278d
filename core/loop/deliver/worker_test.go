package deliver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/ports"
)

const tenant = "t1"

// pushed is one frame a fake device received.
type pushed struct {
	device delivery.Device
	kind   delivery.Kind
	topic  string // MESSAGE pushes
	seq    int64  // MESSAGE pushes
}

// fakePusher plays the session registry: online devices per user, some of which refuse frames.
type fakePusher struct {
	mu      sync.Mutex
	online  map[int64][]uint64
	failing map[delivery.Device]bool
	got     []pushed
}

func (p *fakePusher) Push(ctx context.Context, tenant string, t delivery.Target, push delivery.Push) delivery.Report {
	return p.PushReach(ctx, tenant, delivery.Addressed{Target: t, Push: push})[0].Report
}

func (p *fakePusher) PushReach(_ context.Context, _ string, pushes ...delivery.Addressed) []delivery.Outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]delivery.Outcome, len(pushes))
	for i, a := range pushes {
		out[i] = p.reach(a.Target, a.Push)
	}
	return out
}

// reach pushes one message; the caller holds p.mu.
func (p *fakePusher) reach(t delivery.Target, push delivery.Push) delivery.Outcome {
	var out delivery.Outcome
	for _, user := range t.Recipients {
		devices := p.online[user]
		if len(devices) == 0 {
			out.Offline++
			out.OfflineUsers = append(out.OfflineUsers, user)
		}
		for _, d := range devices {
			dev := delivery.Device{User: user, Device: d}
			switch {
			case user == t.Sender && d == t.ExcludeDevice:
			case p.failing[dev]:
				out.Failed++
				out.FailedDevices = append(out.FailedDevices, dev)
			default:
				out.Delivered++
				got := pushed{device: dev, kind: push.Kind}
				if push.Message != nil {
					got.topic, got.seq = push.Message.Topic, push.Message.Seq
				}
				p.got = append(p.got, got)
			}
		}
	}
	return out
}

func (p *fakePusher) PushDevice(_ context.Context, _ string, user int64, device uint64, push delivery.Push) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.online[user], device) || p.failing[delivery.Device{User: user, Device: device}] {
		return 0
	}
	p.got = append(p.got, pushed{device: delivery.Device{User: user, Device: device}, kind: push.Kind})
	return 1
}

func (p *fakePusher) received() []pushed {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

// flakyQueue fails MarkDone while failMarks > 0: a crash after the lists were updated and
// before the push; and Ack while failAcks > 0: a crash after the push.
type flakyQueue struct {
	*memory.DeliverQueue
	failMarks, failAcks int
}

func (q *flakyQueue) Ack(ctx context.Context, jobs ...delivery.Job) error {
	if q.failAcks > 0 {
		q.failAcks--
		return errors.New("redis went away")
	}
	return q.DeliverQueue.Ack(ctx, jobs...)
}

func (q *flakyQueue) MarkDone(ctx context.Context, tenant string, ttl time.Duration, keys ...string) ([]bool, error) {
	if q.failMarks > 0 {
		q.failMarks--
		return nil, errors.New("redis went away")
	}
	return q.DeliverQueue.MarkDone(ctx, tenant, ttl, keys...)
}

// failingDialogs refuses every list update.
type failingDialogs struct{ ports.DialogStore }

func (failingDialogs) Apply(context.Context, string, ...dialog.Update) ([]dialog.Applied, error) {
	return nil, errors.New("redis down")
}

type fixture struct {
	clock    *memory.Clock
	members  *membership.Cache
	log      *slog.Logger
	queue    *flakyQueue
	pusher   *fakePusher
	notifier *memory.Notifier
	dialogs  *memory.DialogStore
	mailbox  *memory.Mailbox
	metrics  *memory.Metrics
	workers  *Workers
	ackWait  *AckWait // nil: no ack wait
	msg      message.Message
}

// newFixture: groups 10 and 11 (conversations 5000 and 5001) of users 1-4; user 1 sends seq 1
// to group 10 from device 1.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	dir := memory.NewDirectory()
	for u := int64(1); u <= 4; u++ {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	for i := int64(0); i < 2; i++ {
		if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10 + i, Owner: 1}, 5000+i, []int64{2, 3, 4}, 0); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &fixture{
		clock:    clock,
		members:  membership.New(dir, clock, time.Minute),
		log:      log,
		queue:    &flakyQueue{DeliverQueue: memory.NewDeliverQueue(clock.Now)},
		pusher:   &fakePusher{online: map[int64][]uint64{}, failing: map[delivery.Device]bool{}},
		notifier: memory.NewNotifier(),
		dialogs:  memory.NewDialogStore(clock.Now),
		mailbox:  memory.NewMailbox(),
		metrics:  memory.NewMetrics(),
		msg: message.Message{
			Topic: "grp_10", GroupID: 10, ConversationID: 5000, Seq: 1, MsgID: 777, From: 1, ClientMsgID: "c1",
			Type: "text", Content: json.RawMessage(`{"text":"hello"}`), Status: message.StatusNormal, Version: 1,
			CreatedAt: clock.Now(), Month: 202605,
		},
	}
	f.workers = f.newWorkers(Config{MaxAttempts: 3, DoneTTL: time.Minute}, f.queue)
	return f
}

func (f *fixture) newWorkers(cfg Config, queue ports.DeliverQueue) *Workers {
	return New(cfg, Deps{
		Queue: queue, Pusher: f.pusher, Dialogs: f.dialogs, Notifier: f.notifier,
		Mailer:  inbox.NewMailer(inbox.MailerDeps{Mailbox: f.mailbox, Pusher: f.pusher, IDs: memory.NewIDs(f.clock), Clock: f.clock, Log: f.log}),
		Members: f.members, Metrics: f.metrics, Clock: f.clock, Log: f.log, Gaps: f.dialogs, AckWait: f.ackWait,
	})
}

func (f *fixture) messageJob() delivery.Job {
	m := f.msg
	return delivery.Job{
		Tenant: tenant, Kind: delivery.KindMessage, MsgID: m.MsgID, Topic: m.Topic, ConversationID: m.ConversationID,
		From: m.From, ExcludeDevice: 1, Message: &m,
	}
}

// run pushes job and lets the worker handle whatever the queue holds, retries included.
func (f *fixture) run(t *testing.T, job delivery.Job) {
	t.Helper()
	ctx := context.Background()
	if err := f.queue.Push(ctx, job); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
}

// drain lets the worker handle whatever the queue holds.
func (f *fixture) drain(t *testing.T) {
	t.Helper()
	for {
		taken, ok, err := f.queue.Take(context.Background(), tenant, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		f.workers.handle(context.Background(), nil, taken)
	}
}

func (f *fixture) unread(t *testing.T, user int64) (count int64, listed bool) {
	t.Helper()
	entries, err := f.dialogs.Changed(context.Background(), tenant, user, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.ConversationID == 5000 {
			return e.Unread, true
		}
	}
	return 0, false
}

func (f *fixture) missed(t *testing.T, user int64, device uint64) []mailbox.Event {
	t.Helper()
	events, err := f.mailbox.Since(context.Background(), tenant, user, device, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func dev(user int64, device uint64) delivery.Device {
	return delivery.Device{User: user, Device: device}
}

func TestMessageFanOut(t *testing.T) {
	type want struct {
		pushedTo []delivery.Device
		unread   map[int64]int64
		missed   []delivery.Device
		notified []int64
	}
	cases := []struct {
		name    string
		online  map[int64][]uint64
		failing []delivery.Device
		muted   []int64
		job     func(delivery.Job) delivery.Job
		want    want
	}{
		{
			name:   "online devices get it but the sending one; offline users get no mailbox row",
			online: map[int64][]uint64{1: {1, 2}, 2: {5}},
			want: want{
				pushedTo: []delivery.Device{dev(1, 2), dev(2, 5)},
				unread:   map[int64]int64{1: 0, 2: 1, 3: 1, 4: 1},
				notified: []int64{3, 4},
			},
		},
		{
			name:    "a failed push to a connected device leaves a MISSED_MESSAGE row and notifies",
			online:  map[int64][]uint64{2: {5, 6}, 3: {9}},
			failing: []delivery.Device{dev(2, 6)},
			want: want{
				pushedTo: []delivery.Device{dev(2, 5), dev(3, 9)},
				unread:   map[int64]int64{2: 1, 3: 1, 4: 1},
				missed:   []delivery.Device{dev(2, 6)},
				notified: []int64{2, 4},
			},
		},
		{
			name:   "muted users are listed as read and not notified",
			online: map[int64][]uint64{2: {5}},
			muted:  []int64{3},
			want: want{
				pushedTo: []delivery.Device{dev(2, 5)},
				unread:   map[int64]int64{2: 1, 3: 0, 4: 1},
				notified: []int64{4},
			},
		},
		{
			name:    "NotMailbox writes no row, NotPush notifies nobody",
			online:  map[int64][]uint64{2: {5}},
			failing: []delivery.Device{dev(2, 5)},
			job: func(j delivery.Job) delivery.Job {
				j.NotMailbox, j.NotPush = true, true
				return j
			},
			want: want{unread: map[int64]int64{2: 1, 3: 1, 4: 1}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.pusher.online = c.online
			for _, d := range c.failing {
				f.pusher.failing[d] = true
			}
			for _, u := range c.muted {
				if err := f.dialogs.SetMuted(context.Background(), tenant, u, 5000, true); err != nil {
					t.Fatal(err)
				}
			}
			job := f.messageJob()
			if c.job != nil {
				job = c.job(job)
			}
			f.run(t, job)

			var to []delivery.Device
			for _, p := range f.pusher.received() {
				if p.kind == delivery.KindMessage {
					to = append(to, p.device)
				}
			}
			if !sameDevices(to, c.want.pushedTo) {
				t.Fatalf("MESSAGE pushed to %v, want %v", to, c.want.pushedTo)
			}
			for user, want := range c.want.unread {
				if got, listed := f.unread(t, user); !listed || got != want {
					t.Fatalf("user %d: unread %d (listed %v), want %d", user, got, listed, want)
				}
			}
			var missed []delivery.Device
			for u := int64(1); u <= 4; u++ {
				for _, e := range f.missed(t, u, 0) {
					missed = append(missed, dev(e.User, e.Device))
				}
				for _, d := range c.online[u] {
					for _, e := range f.missed(t, u, d) {
						var p mailbox.Missed
						if err := json.Unmarshal(e.Payload, &p); err != nil || e.Type != mailbox.MissedMessage ||
							p != (mailbox.Missed{Topic: "grp_10", ConversationID: 5000, MsgID: 777, Seq: 1}) {
							t.Fatalf("mailbox row %+v (%v)", e, err)
						}
						missed = append(missed, dev(e.User, e.Device))
					}
				}
			}
			if !sameDevices(missed, c.want.missed) {
				t.Fatalf("MISSED_MESSAGE rows for %v, want %v", missed, c.want.missed)
			}
			var notified []int64
			for _, us := range f.notifier.Users() {
				notified = append(notified, us...)
			}
			if !slices.Equal(notified, c.want.notified) {
				t.Fatalf("notified %v, want %v", notified, c.want.notified)
			}
		})
	}
}

func sameDevices(a, b []delivery.Device) bool {
	cmp := func(x, y delivery.Device) int {
		if x.User != y.User {
			return int(x.User - y.User)
		}
		return int(x.Device) - int(y.Device)
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}

func TestUnreadCountsEachMessageOnce(t *testing.T) {
	cases := []struct {
		name  string
		crash int // MarkDone failures: the job dies after the lists, before the push
		twice bool
	}{
		{name: "a job queued twice"},
		{name: "a job retried after a crash between the lists and the push", crash: 1},
		{name: "both", crash: 1, twice: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.pusher.online = map[int64][]uint64{2: {5}}
			f.queue.failMarks = c.crash
			f.run(t, f.messageJob())
			if c.twice {
				f.run(t, f.messageJob())
			}
			f.run(t, f.messageJob())
			for user, want := range map[int64]int64{1: 0, 2: 1, 3: 1, 4: 1} {
				if got, _ := f.unread(t, user); got != want {
					t.Fatalf("user %d: unread %d, want %d", user, got, want)
				}
			}
			// Every run that reached the push pushed the message to user 2's device again (the
			// connection drops the repeats, session.Registry); nobody else got it.
			got := f.pusher.received()
			if len(got) == 0 {
				t.Fatal("no push")
			}
			for _, p := range got {
				if p != got[0] || p.device != dev(2, 5) {
					t.Fatalf("pushes %v, want only the message to user 2", got)
				}
			}
			if skipped := f.metrics.Count("deliver_idempotent_skip_total"); skipped == 0 {
				t.Fatal("the repeated job was not counted as skipped")
			}
		})
	}
}

// TestAResentJobOfAMessagePushedBeforeIsNotPushedAgain: a send queued its job and died before
// its dedup record said so; the job was pushed, then the device reconnected (its new
// connection drops nothing it has not queued itself), then the resend queued the job again
// (delivery.Job.Resent). The second job pushes nothing and counts nothing; a resent job whose
// message no job pushed (a send that died before its enqueue) acts as the first. Simulator
// seed 376 at commit fc55f69 ("pushed 2 times").
func TestAResentJobOfAMessagePushedBeforeIsNotPushedAgain(t *testing.T) {
	cases := []struct {
		name     string
		original bool          // the send that died had queued its job
		later    time.Duration // the resend comes this long after the message was stored
	}{
		{"queued before", true, 0},
		{"never queued before", false, 0},
		// The done marker expired (the fixture's DoneTTL is a minute), the lists still show it.
		{"queued before, resent past the done marks", true, 2 * time.Minute},
		{"never queued before, resent past the done marks", false, 2 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.pusher.online = map[int64][]uint64{2: {5}}
			if c.original {
				f.run(t, f.messageJob())
			}
			f.clock.Advance(c.later)
			resent := f.messageJob()
			resent.Resent = true
			f.run(t, resent)
			if got := f.pusher.received(); len(got) != 1 {
				t.Fatalf("pushes %v, want one", got)
			}
			if got, _ := f.unread(t, 2); got != 1 {
				t.Fatalf("unread of user 2 = %d, want 1", got)
			}
			if f.queue.Queued(tenant) != 0 {
				t.Fatal("the resent job was not acked")
			}
		})
	}
}

// TestAJobBackFromProcessingAfterItsMarkersExpiredActsNoMore: a node pushed a message and died
// before the ack; the job stays in processing until a later boot requeues it, after the done
// markers expired. It must not push or count again (found by core/simulation).
func TestAJobBackFromProcessingAfterItsMarkersExpiredActsNoMore(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.pusher.online = map[int64][]uint64{2: {5}}
	f.queue.failAcks = 1
	f.run(t, f.messageJob())
	f.clock.Advance(2 * time.Minute) // past the fixture's DoneTTL of one minute
	if n, err := f.queue.RequeueStale(ctx, tenant); err != nil || n != 1 {
		t.Fatalf("requeue at boot = %d, %v; want the unacked job back", n, err)
	}
	f.drain(t)
	if got, _ := f.unread(t, 2); got != 1 {
		t.Fatalf("unread of user 2 = %d, want 1", got)
	}
	if got := f.pusher.received(); len(got) != 1 {
		t.Fatalf("pushes %v, want one", got)
	}
	if f.queue.Queued(tenant) != 0 {
		t.Fatal("the stale job was not acked")
	}
}

func TestTopicEventsCountNothing(t *testing.T) {
	f := newFixture(t)
	f.run(t, f.messageJob())
	event := f.messageJob()
	m := *event.Message
	m.Seq, m.MsgID, m.Type, m.Content = 2, 778, "system", json.RawMessage(`{"event":"recall","seq":1,"version":2}`)
	m.CreatedAt = m.CreatedAt.Add(time.Second)
	event.MsgID, event.Message = m.MsgID, &m
	f.run(t, event)
	entries, err := f.dialogs.Changed(context.Background(), tenant, 2, 0, 10)
	if err != nil || len(entries) != 1 || entries[0].Unread != 1 || entries[0].Score != m.CreatedAt.UnixMilli() || entries[0].Preview.Seq != 2 {
		t.Fatalf("list after a recall event = %+v, %v; want 1 unread, re-scored, the event as preview", entries, err)
	}
	if len(f.notifier.Users()) != 1 {
		t.Fatalf("%d notifications; the event must not notify", len(f.notifier.Users()))
	}
}

func TestReadJobsOfTwoReadersBothAct(t *testing.T) {
	f := newFixture(t)
	f.pusher.online = map[int64][]uint64{2: {5, 6}, 3: {8, 9}}
	for _, reader := range []int64{2, 3} {
		device := f.pusher.online[reader][0]
		f.run(t, delivery.Job{
			Tenant: tenant, Kind: delivery.KindRead, MsgID: 777, Topic: "grp_10", ConversationID: 5000, From: reader,
			ExcludeDevice: device, NotPush: true, NotMailbox: true, Recipients: []int64{reader}, Event: json.RawMessage(`{"seq":1}`),
		})
	}
	var to []delivery.Device
	for _, p := range f.pusher.received() {
		if p.kind != delivery.KindRead {
			t.Fatalf("unexpected push %+v", p)
		}
		to = append(to, p.device)
	}
	if !sameDevices(to, []delivery.Device{dev(2, 6), dev(3, 9)}) {
		t.Fatalf("read pushed to %v, want each reader's other device", to)
	}
	if got, listed := f.unread(t, 2); listed || got != 0 {
		t.Fatal("a read job touched the lists")
	}
}

func TestJobsFailingListUpdatesEndAsDeadLetters(t *testing.T) {
	f := newFixture(t)
	f.workers.d.Dialogs = failingDialogs{f.dialogs}
	f.run(t, f.messageJob())
	if got := f.metrics.Count("group_message_dead_letter_total"); got != 1 {
		t.Fatalf("dead letters = %v, want 1", got)
	}
	if got := f.pusher.received(); len(got) != 0 {
		t.Fatalf("a job whose lists failed pushed %v", got)
	}
}

// Consumer tests run the real consumers on a queue of consumerPartitions partitions; the
// fixture's clock stands still unless a test moves it, so no hold ever ends by itself.
const (
	consumerPartitions = 4
	consumerWait       = 200 * time.Millisecond
)

// consume starts the consumers of a queue of consumerPartitions and returns the queue; they
// stop at cleanup.
func (f *fixture) consume(t *testing.T) ports.DeliverQueue {
	t.Helper()
	queue := f.partitioned(t, consumerPartitions)
	f.startConsumers(t, queue)
	return queue
}

// watchedConsumers is consume with a queue that tells when the consumers have settled.
func (f *fixture) watchedConsumers(t *testing.T) *idleWatch {
	t.Helper()
	queue := newIdleWatch(f.partitioned(t, consumerPartitions))
	f.startConsumers(t, queue)
	return queue
}

// idleWatch reports each Take that found its partition empty: the consumer that made it has
// handled (pushed or held) every job it took before.
type idleWatch struct {
	ports.DeliverQueue
	idle chan int // partitions
}

func newIdleWatch(q ports.DeliverQueue) *idleWatch {
	return &idleWatch{DeliverQueue: q, idle: make(chan int, 64)}
}

func (q *idleWatch) Take(ctx context.Context, tenant string, partition int, timeout time.Duration) (delivery.Job, bool, error) {
	job, ok, err := q.DeliverQueue.Take(ctx, tenant, partition, timeout)
	if err == nil && !ok {
		select {
		case q.idle <- partition:
		default: // the next empty Take reports again
		}
	}
	return job, ok, err
}

// settled waits until every partition's consumer found it empty twice since the call: the
// second Take began after the call, so each consumer has handled the jobs queued before it.
func (q *idleWatch) settled(t *testing.T) {
	t.Helper()
	for len(q.idle) > 0 {
		<-q.idle
	}
	empty := make(map[int]int)
	for done := 0; done < q.Partitions(); {
		select {
		case p := <-q.idle:
			if empty[p]++; empty[p] == 2 {
				done++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("consumers never settled: empty takes %v", empty)
		}
	}
}

// partitioned is the fixture's queue split into n partitions.
func (f *fixture) partitioned(t *testing.T, n int) ports.DeliverQueue {
	t.Helper()
	queue, err := f.queue.WithPartitions(n)
	if err != nil {
		t.Fatal(err)
	}
	return queue
}

// startConsumers starts the consumers of queue; they stop at cleanup.
func (f *fixture) startConsumers(t *testing.T, queue ports.DeliverQueue) *Workers {
	t.Helper()
	w := f.newWorkers(Config{MaxAttempts: 3, DoneTTL: time.Minute, TakeTimeout: 20 * time.Millisecond, ReorderWait: consumerWait}, queue)
	if err := w.Start(context.Background(), []string{tenant}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return w
}

// messageIn is the MESSAGE job of seq in group 10 or 11.
func (f *fixture) messageIn(group, seq int64) delivery.Job {
	job := f.messageJob()
	m := *job.Message
	m.Topic, m.GroupID, m.ConversationID = fmt.Sprintf("grp_%d", group), group, 5000+group-10
	m.Seq, m.MsgID, m.ClientMsgID = seq, 1000*group+seq, fmt.Sprintf("c%d", seq)
	job.Topic, job.ConversationID, job.MsgID, job.Message = m.Topic, m.ConversationID, m.MsgID, &m
	return job
}

func pushAll(t *testing.T, q ports.DeliverQueue, jobs ...delivery.Job) {
	t.Helper()
	for _, j := range jobs {
		if err := q.Push(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
}

// messagesOf lists "topic/seq" of the MESSAGE pushes so far, in push order.
func (f *fixture) messagesOf() []string {
	var out []string
	for _, p := range f.pusher.received() {
		if p.kind == delivery.KindMessage {
			out = append(out, fmt.Sprintf("%s/%d", p.topic, p.seq))
		}
	}
	return out
}

// waitMessages waits until n MESSAGE pushes were made and returns them.
func (f *fixture) waitMessages(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := f.messagesOf()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("MESSAGE pushes %v; want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ofTopic keeps the pushes of one topic.
func ofTopic(pushes []string, topic string) []string {
	var out []string
	for _, p := range pushes {
		if strings.HasPrefix(p, topic+"/") {
			out = append(out, p)
		}
	}
	return out
}

func TestConsumersDeliverEachTopicInSeqOrder(t *testing.T) {
	f := newFixture(t)
	f.pusher.online = map[int64][]uint64{2: {5}}
	q := f.consume(t)
	order := []struct{ group, seq int64 }{{10, 3}, {11, 2}, {10, 1}, {10, 2}, {11, 1}, {10, 6}, {10, 4}, {11, 3}, {10, 5}}
	for _, o := range order {
		pushAll(t, q, f.messageIn(o.group, o.seq))
	}
	got := f.waitMessages(t, len(order))
	for topic, want := range map[string][]string{
		"grp_10": {"grp_10/1", "grp_10/2", "grp_10/3", "grp_10/4", "grp_10/5", "grp_10/6"},
		"grp_11": {"grp_11/1", "grp_11/2", "grp_11/3"},
	} {
		if seqs := ofTopic(got, topic); !slices.Equal(seqs, want) {
			t.Errorf("%s pushed %v; want %v", topic, seqs, want)
		}
	}
}

func TestConsumerGivesUpAGapAfterTheWait(t *testing.T) {
	f := newFixture(t)
	f.pusher.online = map[int64][]uint64{2: {5}}
	q := f.watchedConsumers(t)
	pushAll(t, q, f.messageIn(10, 2), f.messageIn(10, 3))
	// However long it really takes, the hold lasts consumerWait on the consumers' clock.
	q.settled(t)
	if got := f.messagesOf(); len(got) != 0 {
		t.Fatalf("pushed %v while seq 1 was missing and the wait had not passed", got)
	}
	f.clock.Advance(consumerWait)
	if got := f.waitMessages(t, 2); !slices.Equal(got, []string{"grp_10/2", "grp_10/3"}) {
		t.Fatalf("pushed %v after the wait; want seqs 2 and 3", got)
	}
	// The seq given up is a gap for the list repair, recorded before the jobs after it acted.
	gaps, err := f.dialogs.Due(context.Background(), tenant, f.clock.Now(), 10)
	if want := (dialog.Gap{Topic: "grp_10", ConversationID: 5000, From: 1, To: 1, Noted: f.clock.Now()}); err != nil || len(gaps) != 1 || gaps[0] != want {
		t.Fatalf("list gaps %+v, %v; want %+v", gaps, err, want)
	}
	// The missing seq turns up after all: late, but delivered.
	pushAll(t, q, f.messageIn(10, 1))
	if got := f.waitMessages(t, 3); got[2] != "grp_10/1" {
		t.Fatalf("pushed %v; want the late seq 1 last", got)
	}
}

func TestConsumerStartsFromTheAppliedSeq(t *testing.T) {
	f := newFixture(t)
	f.pusher.online = map[int64][]uint64{2: {5}}
	// Seq 4 was handled before this process started: its preview says so.
	before := f.messageIn(10, 4)
	if _, err := f.dialogs.Apply(context.Background(), tenant, dialog.Update{
		ConversationID: 5000, Score: 1, Sender: 1, Preview: dialog.PreviewOf(*before.Message), Once: "m4", OnceTTL: time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	q := f.consume(t)
	pushAll(t, q, f.messageIn(10, 6), f.messageIn(10, 5))
	if got := f.waitMessages(t, 2); !slices.Equal(got, []string{"grp_10/5", "grp_10/6"}) {
		t.Fatalf("pushed %v; want 5 then 6 (6 waits for 5, not for 1-4)", got)
	}
}

func TestConsumerPassesOtherJobsWhileATopicWaits(t *testing.T) {
	f := newFixture(t)
	f.pusher.online = map[int64][]uint64{2: {5, 6}}
	q := f.consume(t)
	pushAll(t, q, f.messageIn(10, 2), delivery.Job{
		Tenant: tenant, Kind: delivery.KindRead, MsgID: 777, Topic: "grp_10", ConversationID: 5000, From: 2,
		ExcludeDevice: 5, NotPush: true, NotMailbox: true, Recipients: []int64{2}, Event: json.RawMessage(`{"seq":1}`),
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := f.pusher.received()
		if len(got) == 1 && got[0].kind == delivery.KindRead {
			break
		}
		if len(got) > 1 || time.Now().After(deadline) {
			t.Fatalf("pushes %+v; want the read receipt alone while seq 2 waits for 1", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestConsumerHoldsThroughABacklog(t *testing.T) {
	f := newFixture(t)
	f.pusher.online = map[int64][]uint64{2: {5}}
	queue := f.partitioned(t, 1)
	// Seq 2 of group 10 is queued first, seq 1 behind a backlog of group 11, all at once.
	pushAll(t, queue, f.messageIn(10, 2))
	for seq := int64(1); seq <= 20; seq++ {
		pushAll(t, queue, f.messageIn(11, seq))
	}
	pushAll(t, queue, f.messageIn(10, 1))
	// The consumer starts long after: by the clock every hold is over, yet seq 1 is queued.
	f.clock.Advance(10 * consumerWait)
	f.startConsumers(t, queue)
	got := f.waitMessages(t, 22)
	if seqs := ofTopic(got, "grp_10"); !slices.Equal(seqs, []string{"grp_10/1", "grp_10/2"}) {
		t.Fatalf("group 10 pushed %v; want seq 1 then 2", seqs)
	}
}

func TestConsumerHandlesHeldJobsAtStop(t *testing.T) {
	f := newFixture(t)
	f.pusher.online = map[int64][]uint64{2: {5}}
	queue := newIdleWatch(f.partitioned(t, consumerPartitions))
	w := f.newWorkers(Config{MaxAttempts: 3, DoneTTL: time.Minute, TakeTimeout: 20 * time.Millisecond, ReorderWait: consumerWait}, queue)
	if err := w.Start(context.Background(), []string{tenant}); err != nil {
		t.Fatal(err)
	}
	pushAll(t, queue, f.messageIn(10, 3), f.messageIn(10, 2))
	queue.settled(t) // both taken and held
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.messagesOf(); !slices.Equal(got, []string{"grp_10/2", "grp_10/3"}) {
		t.Fatalf("pushed %v at stop; want the held seqs in order", got)
	}
	if n, err := queue.RequeueStale(context.Background(), tenant); err != nil || n != 0 {
		t.Fatalf("RequeueStale after stop = %d, %v; want nothing left in processing", n, err)
	}
}

// takeAll takes every job the fixture's queue holds.
func (f *fixture) takeAll(t *testing.T) []delivery.Job {
	t.Helper()
	var jobs []delivery.Job
	for {
		job, ok, err := f.queue.Take(context.Background(), tenant, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return jobs
		}
		jobs = append(jobs, job)
	}
}

func TestJobsHandledTogetherActLikeOneAfterAnother(t *testing.T) {
	f := newFixture(t)
	f.pusher.online = map[int64][]uint64{2: {5}, 3: {8}}
	senders := []struct {
		user   int64
		device uint64
	}{{1, 1}, {3, 8}, {4, 1}}
	for i, from := range senders {
		job := f.messageIn(10, int64(i+1))
		job.From, job.Message.From, job.ExcludeDevice = from.user, from.user, from.device
		pushAll(t, f.queue, job)
	}
	pushAll(t, f.queue, delivery.Job{
		Tenant: tenant, Kind: delivery.KindRead, MsgID: 1001, Topic: "grp_10", ConversationID: 5000, From: 3,
		ExcludeDevice: 9, NotPush: true, NotMailbox: true, Recipients: []int64{3}, Event: json.RawMessage(`{"seq":1}`),
	})
	jobs := f.takeAll(t)
	f.workers.handle(context.Background(), nil, jobs...)
	once := f.pusher.received()
	f.workers.handle(context.Background(), nil, jobs...) // a rerun after a crash acts no more
	// …but pushes again (at least once: the connection drops what it already queued).
	if again := f.pusher.received()[len(once):]; !slices.Equal(again, once) {
		t.Errorf("the rerun pushed %v, want the same pushes %v again", again, once)
	}

	for user, want := range map[int64]int64{1: 2, 2: 3, 3: 2, 4: 2} {
		if got, _ := f.unread(t, user); got != want {
			t.Errorf("user %d: unread %d, want %d", user, got, want)
		}
	}
	// Message by message, in seq order; user 3 does not get back what its device sent.
	if got := ofTopic(f.messagesOf(), "grp_10")[:5]; !slices.Equal(got, []string{"grp_10/1", "grp_10/1", "grp_10/2", "grp_10/3", "grp_10/3"}) {
		t.Errorf("MESSAGE pushes %v; want seq 1 to users 2 and 3, 2 to user 2, 3 to both", got)
	}
	reads := 0
	for _, p := range once {
		if p.kind == delivery.KindRead {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("%d read pushes; want 1", reads)
	}
	if n, err := f.queue.RequeueStale(context.Background(), tenant); err != nil || n != 0 {
		t.Fatalf("RequeueStale = %d, %v; want every job acked", n, err)
	}
}

func TestFailedListsHoldBackOnlyMessageJobs(t *testing.T) {
	f := newFixture(t)
	f.workers.d.Dialogs = failingDialogs{f.dialogs}
	f.pusher.online = map[int64][]uint64{2: {5, 6}}
	pushAll(t, f.queue, f.messageJob(), delivery.Job{
		Tenant: tenant, Kind: delivery.KindRead, MsgID: 777, Topic: "grp_10", ConversationID: 5000, From: 2,
		ExcludeDevice: 5, NotPush: true, NotMailbox: true, Recipients: []int64{2}, Event: json.RawMessage(`{"seq":1}`),
	})
	for jobs := f.takeAll(t); len(jobs) > 0; jobs = f.takeAll(t) {
		f.workers.handle(context.Background(), nil, jobs...)
	}
	if got := f.pusher.received(); len(got) != 1 || got[0].kind != delivery.KindRead {
		t.Fatalf("pushes %+v; want only the read receipt", got)
	}
	if got := f.metrics.Count("group_message_dead_letter_total"); got != 1 {
		t.Fatalf("dead letters = %v; want the message job", got)
	}
}
