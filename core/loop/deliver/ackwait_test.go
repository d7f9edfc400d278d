package deliver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/inbox"
)

// watermarks is a memory store of DeliveredToUsers: how far each user got conversation 9.
type watermarks struct {
	mu    sync.Mutex
	seqs  map[int64]int64
	err   error
	reads int
}

func (w *watermarks) DeliveredToUsers(_ context.Context, _ string, _ int64, users []int64) (map[int64]int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reads++
	out := map[int64]int64{}
	for _, u := range users {
		out[u] = w.seqs[u]
	}
	return out, w.err
}

// holdersBut: every user holds a push token but these.
type holdersBut []int64

func (h holdersBut) Has(_ string, user int64) bool { return !slices.Contains(h, user) }

func (w *watermarks) raise(user, seq int64) {
	w.mu.Lock()
	w.seqs[user] = max(w.seqs[user], seq)
	w.mu.Unlock()
}

// A live push reached users 2, 3 and 4 (1 sent it, 5 was offline and notified at once). Once
// the wait ends, those whose devices acknowledged it or who read it get nothing; the others
// get the one notification an offline user gets, under the same mute rules (issue 32).
func TestAckWaitAlertsOnlyWhoTookNothing(t *testing.T) {
	const waitFor = 10 * time.Second
	tests := []struct {
		name       string
		acked      map[int64]int64 // user → watermark reached before the wait ended
		late       map[int64]int64 // user → watermark reached after it
		muted      map[int64]bool
		mentions   []int64
		notPush    bool
		cap        int
		told       []int64 // users another node's fallback already told
		tokenless  []int64 // users holding no push token
		storeErr   error
		wantAlert  []int64 // the users of the one ack-wait notification; nil: none
		wantResult map[string]float64
	}{
		{name: "nobody acked: one alert for all", wantAlert: []int64{2, 3, 4},
			wantResult: map[string]float64{"alerted": 3}},
		{name: "acked in time: no alert for that user", acked: map[int64]int64{2: 4, 3: 4}, wantAlert: []int64{4},
			wantResult: map[string]float64{"acked": 2, "alerted": 1}},
		{name: "read past it in time counts", acked: map[int64]int64{2: 7, 3: 9, 4: 5},
			wantResult: map[string]float64{"acked": 3}},
		{name: "an older ack does not count", acked: map[int64]int64{2: 3}, wantAlert: []int64{2, 3, 4},
			wantResult: map[string]float64{"alerted": 3}},
		{name: "an ack after the wait is too late", late: map[int64]int64{2: 4}, wantAlert: []int64{2, 3, 4},
			wantResult: map[string]float64{"alerted": 3}},
		{name: "muted: nothing", muted: map[int64]bool{3: true, 4: true}, wantAlert: []int64{2},
			wantResult: map[string]float64{"alerted": 1}},
		{name: "muted but mentioned", muted: map[int64]bool{3: true, 4: true}, mentions: []int64{4}, wantAlert: []int64{2, 4},
			wantResult: map[string]float64{"alerted": 2}},
		{name: "NotPush kinds wait for nothing", notPush: true, wantResult: map[string]float64{}},
		{name: "over the cap: dropped and counted", cap: 2, wantAlert: []int64{2, 3},
			wantResult: map[string]float64{"alerted": 2, "dropped": 1}},
		{name: "token-less users wait for nothing", tokenless: []int64{3}, wantAlert: []int64{2, 4},
			wantResult: map[string]float64{"alerted": 2}},
		{name: "nobody holds a token: no wait, no read", tokenless: []int64{2, 3, 4, 5}, wantResult: map[string]float64{}},
		{name: "the cap counts token holders only", cap: 2, tokenless: []int64{3}, wantAlert: []int64{2, 4},
			wantResult: map[string]float64{"alerted": 2}},
		{name: "told by another node: no second alert", told: []int64{3}, wantAlert: []int64{2, 4},
			wantResult: map[string]float64{"alerted": 2, "told": 1}},
		{name: "watermark unreadable: no alert", storeErr: errors.New("mysql down"),
			wantResult: map[string]float64{"failed": 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC)
			clock := memory.NewClock(start)
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			metrics, notifier := memory.NewMetrics(), memory.NewNotifier()
			marks := &watermarks{seqs: map[int64]int64{}, err: tc.storeErr}
			wait := NewAckWait(AckWaitConfig{Wait: waitFor, Cap: tc.cap}, AckWaitDeps{Holders: holdersBut(tc.tokenless), Watermarks: marks, Marks: memory.NewDeliverQueue(clock.Now), Notifier: notifier, Clock: clock, Metrics: metrics, Log: log})
			mailer := inbox.NewMailer(inbox.MailerDeps{Mailbox: memory.NewMailbox(), Pusher: &fakePusher{}, IDs: memory.NewIDs(clock), Clock: clock, Log: log})
			f := NewFallback(Config{}, Deps{Queue: memory.NewDeliverQueue(clock.Now), Mailer: mailer, Notifier: notifier, Metrics: metrics, Log: log, AckWait: wait})
			wait.Told(context.Background(), tenant, 104, tc.told)

			f.Act(context.Background(), tenant, delivery.Unreached{
				Message: &message.Message{Topic: "grp_1", ConversationID: 9, Seq: 4, MsgID: 104, Type: "text", From: 1, Mentions: tc.mentions},
				From:    1, NotPush: tc.notPush, Muted: tc.muted, Offline: []int64{5}, Recipients: []int64{1, 2, 3, 4, 5},
			})
			before := len(notifier.Users())
			for u, seq := range tc.acked {
				marks.raise(u, seq)
			}
			wait.Check(context.Background(), start.Add(waitFor-time.Millisecond)) // not due yet
			if got := len(notifier.Users()); got != before {
				t.Fatalf("%d notifications before the wait ended", got-before)
			}
			clock.Advance(waitFor)
			wait.Check(context.Background(), clock.Now())
			for u, seq := range tc.late {
				marks.raise(u, seq)
			}
			wait.Check(context.Background(), clock.Now().Add(time.Hour)) // each user is checked once
			var got [][]int64
			if all := notifier.Users(); len(all) > before {
				got = all[before:]
			}
			if tc.wantAlert == nil && len(got) != 0 || tc.wantAlert != nil && (len(got) != 1 || !slices.Equal(got[0], tc.wantAlert)) {
				t.Fatalf("ack-wait notifications %v; want one for %v", got, tc.wantAlert)
			}
			if want := map[bool]int{false: 1, true: 0}[len(tc.wantResult) == 0]; marks.reads != want {
				t.Errorf("%d watermark reads; want %d (one per message)", marks.reads, want)
			}
			for _, r := range []string{ackWaitAlerted, ackWaitAcked, ackWaitDropped, ackWaitFailed, ackWaitTold} {
				if c := metrics.Count("push_ack_wait_total", r); c != tc.wantResult[r] {
					t.Errorf("push_ack_wait_total{result=%q} = %v; want %v", r, c, tc.wantResult[r])
				}
			}
		})
	}
}

// A job acted on twice on one node (a rerun within the wait) still gives each user one wait,
// and a wait of 0 is no wait at all.
func TestAckWaitOncePerUserAndMessage(t *testing.T) {
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	metrics, notifier := memory.NewMetrics(), memory.NewNotifier()
	d := AckWaitDeps{Holders: holdersBut(nil), Watermarks: &watermarks{seqs: map[int64]int64{}}, Marks: memory.NewDeliverQueue(clock.Now), Notifier: notifier, Clock: clock, Metrics: metrics,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if NewAckWait(AckWaitConfig{}, d) != nil {
		t.Fatal("a wait of 0 is not off")
	}
	var off *AckWait
	off.Expect(tenant, []int64{2}, previewOf(4))
	off.Run(context.Background()) // returns at once

	w := NewAckWait(AckWaitConfig{Wait: time.Second}, d)
	w.Expect(tenant, []int64{2, 3}, previewOf(4))
	clock.Advance(500 * time.Millisecond)
	w.Expect(tenant, []int64{2}, previewOf(4)) // the same wait again
	w.Expect(tenant, []int64{2}, previewOf(5)) // the next message is a wait of its own
	clock.Advance(600 * time.Millisecond)
	w.Check(context.Background(), clock.Now())
	if got := notifier.Users(); len(got) != 1 || !slices.Equal(got[0], []int64{2, 3}) {
		t.Fatalf("notifications %v; want one for 2 and 3 (seq 5 not due yet)", got)
	}
	clock.Advance(time.Second)
	w.Check(context.Background(), clock.Now())
	if got := notifier.Users(); len(got) != 2 || !slices.Equal(got[1], []int64{2}) {
		t.Fatalf("notifications %v; want a second, for seq 5 of 2", got)
	}
}

func previewOf(seq int64) dialog.Preview {
	return dialog.Preview{Topic: "grp_1", ConversationID: 9, Seq: seq, MsgID: 100 + seq}
}

// The users of one message are read and notified maxAckWaitRead at a time, so a large group
// costs a few reads of the unique key, not one per member.
func TestAckWaitReadsInChunks(t *testing.T) {
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	marks, notifier, metrics := &watermarks{seqs: map[int64]int64{}}, memory.NewNotifier(), memory.NewMetrics()
	w := NewAckWait(AckWaitConfig{Wait: time.Second}, AckWaitDeps{Holders: holdersBut(nil), Watermarks: marks, Marks: memory.NewDeliverQueue(clock.Now), Notifier: notifier, Clock: clock, Metrics: metrics,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	users := make([]int64, maxAckWaitRead+500)
	for i := range users {
		users[i] = int64(i + 2)
	}
	marks.raise(2, 4)
	w.Expect(tenant, users, previewOf(4))
	clock.Advance(time.Second)
	w.Check(context.Background(), clock.Now())
	got := notifier.Users()
	if marks.reads != 2 || len(got) != 2 || len(got[0])+len(got[1]) != len(users)-1 {
		t.Fatalf("%d reads, notifications of %d users; want 2 reads and all but the acked one", marks.reads, len(got))
	}
	if metrics.Count("push_ack_wait_total", ackWaitAlerted) != float64(len(users)-1) || metrics.Count("push_ack_wait_total", ackWaitAcked) != 1 {
		t.Fatal("push_ack_wait_total does not count every user once")
	}
}

// Through the deliver worker: user 4 is offline and 3's device refuses the frame, so both are
// notified at once; 2 took it live and is notified only once the wait ends without an ack.
func TestWorkerWaitsForTheAcksOfWhomItReached(t *testing.T) {
	f := newFixture(t)
	marks := &watermarks{seqs: map[int64]int64{}}
	f.ackWait = NewAckWait(AckWaitConfig{Wait: 10 * time.Second}, AckWaitDeps{Holders: holdersBut(nil), Watermarks: marks, Marks: f.queue, Notifier: f.notifier, Clock: f.clock, Metrics: f.metrics, Log: f.log})
	f.workers = f.newWorkers(Config{MaxAttempts: 3, DoneTTL: time.Minute}, f.queue)
	f.pusher.online = map[int64][]uint64{1: {1, 2}, 2: {1}, 3: {1}}
	f.pusher.failing = map[delivery.Device]bool{dev(3, 1): true}
	f.run(t, f.messageJob())
	if got := f.notifier.Users(); len(got) != 1 || !slices.Equal(got[0], []int64{3, 4}) {
		t.Fatalf("notifications at once %v; want [[3 4]]", got)
	}
	f.clock.Advance(10 * time.Second)
	f.ackWait.Check(context.Background(), f.clock.Now())
	if got := f.notifier.Users(); len(got) != 2 || !slices.Equal(got[1], []int64{2}) {
		t.Fatalf("notifications after the wait %v; want a second, for 2 alone (1 sent it)", got)
	}
}

// Two nodes share the done marks. Node A pushed to users 2 and 3 and waits for both; node B
// held their devices: 2's refused the frame, so B's fallback told 2 at once. When A's wait
// ends, 2 is not told again and 3 is alerted. Node C's wait for the same message (a job run
// again elsewhere) alerts nobody a second time.
func TestAckWaitAlertsOnceAcrossNodes(t *testing.T) {
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	shared, notifier, metrics := memory.NewDeliverQueue(clock.Now), memory.NewNotifier(), memory.NewMetrics()
	marks := &watermarks{seqs: map[int64]int64{}}
	node := func() *AckWait {
		return NewAckWait(AckWaitConfig{Wait: time.Second}, AckWaitDeps{Holders: holdersBut(nil), Watermarks: marks, Marks: shared, Notifier: notifier, Clock: clock, Metrics: metrics, Log: log})
	}
	a, c := node(), node()
	mailer := inbox.NewMailer(inbox.MailerDeps{Mailbox: memory.NewMailbox(), Pusher: &fakePusher{}, IDs: memory.NewIDs(clock), Clock: clock, Log: log})
	b := NewFallback(Config{}, Deps{Queue: shared, Mailer: mailer, Notifier: notifier, Metrics: metrics, Log: log, AckWait: node()})

	m := &message.Message{Topic: "grp_1", ConversationID: 9, Seq: 4, MsgID: 104, Type: "text", From: 1}
	a.Expect(tenant, []int64{2, 3}, dialog.PreviewOf(*m))
	c.Expect(tenant, []int64{2, 3}, dialog.PreviewOf(*m))
	b.ActOnce(context.Background(), tenant, "m104@b", delivery.Unreached{Message: m, From: 1, Failed: []delivery.Device{{User: 2, Device: 1}}})
	clock.Advance(time.Second)
	a.Check(context.Background(), clock.Now())
	c.Check(context.Background(), clock.Now())
	if got := notifier.Users(); len(got) != 2 || !slices.Equal(got[0], []int64{2}) || !slices.Equal(got[1], []int64{3}) {
		t.Fatalf("notifications %v; want [[2] [3]]: 2 by B's fallback, 3 by one wait", got)
	}
	if metrics.Count("push_ack_wait_total", ackWaitTold) != 3 || metrics.Count("push_ack_wait_total", ackWaitAlerted) != 1 {
		t.Fatal("push_ack_wait_total: want 3 told (2 on A, 2 and 3 on C) and 1 alerted")
	}
}
