// Package deliver runs the fan-out side of seed 003 §12: workers take jobs from the reliable
// queue, update every recipient's conversation list, push to connected devices, and fall back to
// the mailbox and the system push service for devices the push did not reach.
package deliver

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"imd/core/delivery"
	"imd/core/dialog"
	"imd/core/fanout"
	"imd/core/inbox"
	"imd/core/mailbox"
	"imd/core/membership"
	"imd/ports"
)

// Config sizes the worker pool (seed 003 §19 deliver).
type Config struct {
	Workers     int           // per tenant
	TakeTimeout time.Duration // BLMOVE wait, bounds how long Stop waits for an idle worker
	DoneTTL     time.Duration // lifetime of deliver:done:{msg_id} and of the list batch markers
	MaxAttempts int           // then the job goes to the dead-letter list
}

// Deps are the ports the workers use.
type Deps struct {
	Queue    ports.DeliverQueue
	Pusher   ports.DevicePusher
	Dialogs  ports.DialogStore
	Mailer   *inbox.Mailer
	Notifier ports.PushNotifier
	Members  *membership.Cache
	Metrics  ports.Metrics
	Clock    ports.Clock
	Log      *slog.Logger
}

// Workers is the deliver worker pool of all tenants.
type Workers struct {
	cfg    Config
	d      Deps
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a stopped pool.
func New(cfg Config, d Deps) *Workers {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.DoneTTL <= 0 {
		cfg.DoneTTL = 10 * time.Minute
	}
	return &Workers{cfg: cfg, d: d}
}

// Start requeues what a previous process left in processing, then starts the workers. Jobs are
// never lost by a crash: they stay in processing until this boot moves them back.
func (w *Workers) Start(ctx context.Context, tenants []string) error {
	for _, t := range tenants {
		n, err := w.d.Queue.RequeueStale(ctx, t)
		if err != nil {
			return err
		}
		if n > 0 {
			w.d.Log.InfoContext(ctx, "requeued unfinished deliver jobs", "tenant", t, "jobs", n)
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	for _, t := range tenants {
		for range max(1, w.cfg.Workers) {
			w.wg.Add(1)
			go w.loop(runCtx, t)
		}
	}
	return nil
}

// Stop lets every worker finish its current job and returns; untaken jobs stay queued.
func (w *Workers) Stop(ctx context.Context) error {
	if w.cancel == nil {
		return nil
	}
	w.cancel()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Workers) loop(ctx context.Context, tenant string) {
	defer w.wg.Done()
	for ctx.Err() == nil {
		job, ok, err := w.d.Queue.Take(ctx, tenant, w.cfg.TakeTimeout)
		if err != nil {
			if ctx.Err() == nil {
				w.d.Log.WarnContext(ctx, "deliver take failed", "tenant", tenant, "err", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		if !ok {
			continue
		}
		// A taken job is finished even while stopping, so it does not wait for the next boot.
		w.handle(context.WithoutCancel(ctx), job)
	}
}

// handle runs one job. The list updates come first and act once per recipient batch, whatever
// happens later; the push acts once per job (deliver:done). A crash anywhere leaves the job in
// processing, and its rerun skips what already acted, so unread never counts a message twice.
func (w *Workers) handle(ctx context.Context, job delivery.Job) {
	started := w.d.Clock.Now()
	recipients := job.Recipients
	if recipients == nil {
		var err error
		recipients, err = w.d.Members.Members(ctx, job.Tenant, job.Topic)
		if err != nil {
			w.retry(ctx, job, err)
			return
		}
	}
	var muted map[int64]bool
	if job.Kind == delivery.KindMessage && job.Message != nil {
		var err error
		if muted, err = w.updateLists(ctx, job, recipients); err != nil {
			w.retry(ctx, job, err)
			return
		}
	}
	first, err := w.d.Queue.MarkDone(ctx, job.Tenant, job.DoneKey(), w.cfg.DoneTTL)
	if err != nil {
		w.retry(ctx, job, err)
		return
	}
	if first {
		out := w.d.Pusher.PushReach(ctx, job.Tenant, delivery.Target{
			Recipients: recipients, Sender: job.From, ExcludeDevice: job.ExcludeDevice,
		}, delivery.Push{Kind: job.Kind, Message: job.Message, Data: job.Event})
		if job.Kind == delivery.KindMessage && job.Message != nil {
			w.recordMissed(ctx, job, out.FailedDevices)
			w.notify(ctx, job, out, muted)
		}
	} else {
		w.d.Metrics.Inc("deliver_idempotent_skip_total")
	}
	if err := w.d.Queue.Ack(ctx, job); err != nil {
		w.d.Log.WarnContext(ctx, "deliver ack failed", "tenant", job.Tenant, "msg_id", job.MsgID, "err", err)
	}
	w.d.Metrics.Observe("deliver_job_latency", w.d.Clock.Now().Sub(started).Seconds())
}

// listBatches is how many batches the recipients of one message are split into, by user id.
// A batch is one atomic Redis script: enough batches keep a 100,000-member group's scripts
// short, and the split depends on the user id only, so a retry after membership changed still
// finds each user in the batch that already counted them.
const listBatches = 64

// updateLists applies the message to every recipient's conversation list (seed 003 §11) and
// returns who muted the conversation.
func (w *Workers) updateLists(ctx context.Context, job delivery.Job, recipients []int64) (map[int64]bool, error) {
	m := job.Message
	applied, err := w.d.Dialogs.Apply(ctx, job.Tenant, dialog.Update{
		ConversationID: m.ConversationID, Score: dialog.ScoreOf(m.CreatedAt), Sender: m.From,
		Silent: !dialog.CountsAsUnread(*m), Preview: dialog.PreviewOf(*m), Once: job.DoneKey(), OnceTTL: w.cfg.DoneTTL,
		Batches: batchesOf(recipients),
	})
	if err != nil {
		return nil, err
	}
	muted := make(map[int64]bool)
	for _, a := range applied {
		for _, u := range a.Muted {
			muted[u] = true
		}
	}
	return muted, nil
}

func batchesOf(users []int64) []dialog.Batch {
	byIndex := make(map[int][]int64)
	for _, u := range users {
		i := int(uint64(u) % listBatches)
		byIndex[i] = append(byIndex[i], u)
	}
	out := make([]dialog.Batch, 0, len(byIndex))
	for i, us := range byIndex {
		out = append(out, dialog.Batch{Index: i, Users: us})
	}
	slices.SortFunc(out, func(a, b dialog.Batch) int { return a.Index - b.Index })
	return out
}

// recordMissed writes a MISSED_MESSAGE row for each connected device the push did not reach
// (DESIGN §1: offline users get none, their list marks the conversation). The rows only save
// those devices a full list sync, so a failure is logged, not retried: the job already pushed.
func (w *Workers) recordMissed(ctx context.Context, job delivery.Job, failed []fanout.Device) {
	if job.NotMailbox || len(failed) == 0 {
		return
	}
	m := job.Message
	payload, err := json.Marshal(mailbox.Missed{Topic: m.Topic, ConversationID: m.ConversationID, MsgID: m.MsgID, Seq: m.Seq})
	if err != nil {
		w.d.Log.ErrorContext(ctx, "missed-message payload", "msg_id", m.MsgID, "err", err)
		return
	}
	events := make([]mailbox.Event, len(failed))
	for i, f := range failed {
		events[i] = mailbox.Event{User: f.User, Device: f.Device, Type: mailbox.MissedMessage, ConversationID: m.ConversationID, Payload: payload}
	}
	if _, err := w.d.Mailer.Post(ctx, job.Tenant, events); err != nil {
		w.d.Metrics.Inc("deliver_mailbox_total", "failed")
		w.d.Log.ErrorContext(ctx, "missed-message rows not written", "tenant", job.Tenant, "msg_id", m.MsgID, "devices", len(failed), "err", err)
		return
	}
	for range events {
		w.d.Metrics.Inc("deliver_mailbox_total", "ok")
	}
}

// notify hands the message to the system push service for recipients it did not reach: offline
// users and users with a failed device, never the sender or users who muted the conversation.
// Topic events (a recall, an edit) are no news worth a notification.
func (w *Workers) notify(ctx context.Context, job delivery.Job, out fanout.Outcome, muted map[int64]bool) {
	if job.NotPush || !dialog.CountsAsUnread(*job.Message) {
		return
	}
	users := slices.Clone(out.OfflineUsers)
	for _, f := range out.FailedDevices {
		users = append(users, f.User)
	}
	users = slices.DeleteFunc(users, func(u int64) bool { return u == job.From || muted[u] })
	if len(users) == 0 {
		return
	}
	slices.Sort(users)
	users = slices.Compact(users)
	if err := w.d.Notifier.Notify(ctx, job.Tenant, fanout.Notification{Users: users, Preview: dialog.PreviewOf(*job.Message)}); err != nil {
		// Counted, and logged at debug only: a push service that is down would otherwise
		// log once per message.
		w.d.Metrics.Inc("deliver_notify_total", "failed")
		w.d.Log.DebugContext(ctx, "system push failed", "tenant", job.Tenant, "msg_id", job.MsgID, "users", len(users), "err", err)
		return
	}
	w.d.Metrics.Inc("deliver_notify_total", "ok")
}

func (w *Workers) retry(ctx context.Context, job delivery.Job, cause error) {
	dead, err := w.d.Queue.Retry(ctx, job, w.cfg.MaxAttempts)
	switch {
	case err != nil:
		w.d.Log.ErrorContext(ctx, "deliver retry failed; job stays in processing until requeue",
			"tenant", job.Tenant, "msg_id", job.MsgID, "cause", cause, "err", err)
	case dead:
		w.d.Metrics.Inc("group_message_dead_letter_total")
		w.d.Log.ErrorContext(ctx, "deliver job dead-lettered", "tenant", job.Tenant, "msg_id", job.MsgID, "cause", cause)
	default:
		w.d.Log.WarnContext(ctx, "deliver job retried", "tenant", job.Tenant, "msg_id", job.MsgID, "cause", cause)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
