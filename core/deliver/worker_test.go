package deliver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"imd/adapters/memory"
	"imd/core/delivery"
	"imd/core/dialog"
	"imd/core/fanout"
	"imd/core/inbox"
	"imd/core/mailbox"
	"imd/core/membership"
	"imd/core/message"
	"imd/core/social"
	"imd/ports"
)

const tenant = "t1"

// pushed is one frame a fake device received.
type pushed struct {
	device fanout.Device
	kind   delivery.Kind
	seq    int64 // MESSAGE pushes
}

// fakePusher plays the session registry: online devices per user, some of which refuse frames.
type fakePusher struct {
	mu      sync.Mutex
	online  map[int64][]uint64
	failing map[fanout.Device]bool
	got     []pushed
}

func (p *fakePusher) Push(ctx context.Context, tenant string, t delivery.Target, push delivery.Push) delivery.Report {
	return p.PushReach(ctx, tenant, t, push).Report
}

func (p *fakePusher) PushReach(_ context.Context, _ string, t delivery.Target, push delivery.Push) fanout.Outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out fanout.Outcome
	for _, user := range t.Recipients {
		devices := p.online[user]
		if len(devices) == 0 {
			out.Offline++
			out.OfflineUsers = append(out.OfflineUsers, user)
		}
		for _, d := range devices {
			dev := fanout.Device{User: user, Device: d}
			switch {
			case user == t.Sender && d == t.ExcludeDevice:
			case p.failing[dev]:
				out.Failed++
				out.FailedDevices = append(out.FailedDevices, dev)
			default:
				out.Delivered++
				got := pushed{device: dev, kind: push.Kind}
				if push.Message != nil {
					got.seq = push.Message.Seq
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
	if !slices.Contains(p.online[user], device) || p.failing[fanout.Device{User: user, Device: device}] {
		return 0
	}
	p.got = append(p.got, pushed{device: fanout.Device{User: user, Device: device}, kind: push.Kind})
	return 1
}

func (p *fakePusher) received() []pushed {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

type fakeNotifier struct {
	mu    sync.Mutex
	users [][]int64
}

func (n *fakeNotifier) Notify(_ context.Context, _ string, note fanout.Notification) error {
	n.mu.Lock()
	n.users = append(n.users, note.Users)
	n.mu.Unlock()
	return nil
}

// flakyQueue fails MarkDone while failMarks > 0: a crash after the lists were updated and
// before the push.
type flakyQueue struct {
	*memory.DeliverQueue
	failMarks int
}

func (q *flakyQueue) MarkDone(ctx context.Context, tenant, key string, ttl time.Duration) (bool, error) {
	if q.failMarks > 0 {
		q.failMarks--
		return false, errors.New("redis went away")
	}
	return q.DeliverQueue.MarkDone(ctx, tenant, key, ttl)
}

// failingDialogs refuses every list update.
type failingDialogs struct{ ports.DialogStore }

func (failingDialogs) Apply(context.Context, string, dialog.Update) ([]dialog.Applied, error) {
	return nil, errors.New("redis down")
}

type fixture struct {
	queue    *flakyQueue
	pusher   *fakePusher
	notifier *fakeNotifier
	dialogs  *memory.DialogStore
	mailbox  *memory.Mailbox
	metrics  *memory.Metrics
	workers  *Workers
	msg      message.Message
}

// newFixture: group 10 (conversation 5000) of users 1-4; user 1 sends seq 1 from device 1.
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
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 5000, []int64{2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		queue:    &flakyQueue{DeliverQueue: memory.NewDeliverQueue(clock.Now)},
		pusher:   &fakePusher{online: map[int64][]uint64{}, failing: map[fanout.Device]bool{}},
		notifier: &fakeNotifier{},
		dialogs:  memory.NewDialogStore(clock.Now),
		mailbox:  memory.NewMailbox(),
		metrics:  memory.NewMetrics(),
		msg: message.Message{
			Topic: "grp_10", GroupID: 10, ConversationID: 5000, Seq: 1, MsgID: 777, From: 1, ClientMsgID: "c1",
			Type: "text", Content: json.RawMessage(`{"text":"hello"}`), Status: message.StatusNormal, Version: 1,
			CreatedAt: clock.Now(), Month: 202605,
		},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.workers = New(Config{MaxAttempts: 3, DoneTTL: time.Minute}, Deps{
		Queue: f.queue, Pusher: f.pusher, Dialogs: f.dialogs, Notifier: f.notifier,
		Mailer:  inbox.NewMailer(inbox.MailerDeps{Mailbox: f.mailbox, Pusher: f.pusher, IDs: memory.NewIDs(clock), Clock: clock, Log: log}),
		Members: membership.New(dir, clock, time.Minute), Metrics: f.metrics, Clock: clock, Log: log,
	})
	return f
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
	for {
		taken, ok, err := f.queue.Take(ctx, tenant, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		f.workers.handle(ctx, taken)
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

func dev(user int64, device uint64) fanout.Device { return fanout.Device{User: user, Device: device} }

func TestMessageFanOut(t *testing.T) {
	type want struct {
		pushedTo []fanout.Device
		unread   map[int64]int64
		missed   []fanout.Device
		notified []int64
	}
	cases := []struct {
		name    string
		online  map[int64][]uint64
		failing []fanout.Device
		muted   []int64
		job     func(delivery.Job) delivery.Job
		want    want
	}{
		{
			name:   "online devices get it but the sending one; offline users get no mailbox row",
			online: map[int64][]uint64{1: {1, 2}, 2: {5}},
			want: want{
				pushedTo: []fanout.Device{dev(1, 2), dev(2, 5)},
				unread:   map[int64]int64{1: 0, 2: 1, 3: 1, 4: 1},
				notified: []int64{3, 4},
			},
		},
		{
			name:    "a failed push to a connected device leaves a MISSED_MESSAGE row and notifies",
			online:  map[int64][]uint64{2: {5, 6}, 3: {9}},
			failing: []fanout.Device{dev(2, 6)},
			want: want{
				pushedTo: []fanout.Device{dev(2, 5), dev(3, 9)},
				unread:   map[int64]int64{2: 1, 3: 1, 4: 1},
				missed:   []fanout.Device{dev(2, 6)},
				notified: []int64{2, 4},
			},
		},
		{
			name:   "muted users are listed as read and not notified",
			online: map[int64][]uint64{2: {5}},
			muted:  []int64{3},
			want: want{
				pushedTo: []fanout.Device{dev(2, 5)},
				unread:   map[int64]int64{2: 1, 3: 0, 4: 1},
				notified: []int64{4},
			},
		},
		{
			name:    "NotMailbox writes no row, NotPush notifies nobody",
			online:  map[int64][]uint64{2: {5}},
			failing: []fanout.Device{dev(2, 5)},
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

			var to []fanout.Device
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
			var missed []fanout.Device
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
			for _, us := range f.notifier.users {
				notified = append(notified, us...)
			}
			if !slices.Equal(notified, c.want.notified) {
				t.Fatalf("notified %v, want %v", notified, c.want.notified)
			}
		})
	}
}

func sameDevices(a, b []fanout.Device) bool {
	cmp := func(x, y fanout.Device) int {
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
			if got := f.pusher.received(); len(got) != 1 || got[0].device != dev(2, 5) {
				t.Fatalf("pushes %v, want one to user 2", got)
			}
			if skipped := f.metrics.Count("deliver_idempotent_skip_total"); skipped == 0 {
				t.Fatal("the repeated job was not counted as skipped")
			}
		})
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
	if len(f.notifier.users) != 1 {
		t.Fatalf("%d notifications; the event must not notify", len(f.notifier.users))
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
	var to []fanout.Device
	for _, p := range f.pusher.received() {
		if p.kind != delivery.KindRead {
			t.Fatalf("unexpected push %+v", p)
		}
		to = append(to, p.device)
	}
	if !sameDevices(to, []fanout.Device{dev(2, 6), dev(3, 9)}) {
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
