// Package deliver runs the fan-out side of seed 003 §12: workers take jobs from the reliable
// queue, update every recipient's conversation list, push to connected devices, and fall back to
// the mailbox and the system push service for devices the push did not reach.
package deliver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/kit/inflight"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/ports"
)

// Config tunes the consumers (seed 003 §19 deliver). Each tenant gets one consumer per queue
// partition: a partition's jobs are handled one after another, which is what keeps each topic
// in seq order.
type Config struct {
	TakeTimeout time.Duration // BLMOVE wait, bounds how long Stop waits for an idle consumer
	DoneTTL     time.Duration // lifetime of deliver:done:{msg_id} and of the list batch markers
	MaxAttempts int           // then the job goes to the dead-letter list
	// ReorderWait is how long a MESSAGE job waits for the seqs before it, unless their sends
	// still run on this node (see sequencer and Deps.InFlight).
	ReorderWait time.Duration
	// SendBound is how long a send may run from its seq's allocation to its deliver job's
	// enqueue (the send path's request timeout, plus the clocks' skew). While other nodes
	// consume the tenant too, a gap may be a send still running on one of them, which this
	// node cannot see: the job waits up to SendBound instead of ReorderWait. A send that
	// failed for good then holds its topic that long, once.
	SendBound time.Duration
	// RepairWindow is how long the list batch markers of a job that came behind its topic's
	// next seq live (DoneTTL for the others): such a job's seq was a gap (dialog.Gap) the list
	// repair may re-apply any time within the window, and the marker keeps the two from both
	// counting it. Zero: DoneTTL.
	RepairWindow time.Duration
}

// Bounds of a consumer's sequencer.
const (
	// maxHeldPerTopic caps the jobs one topic holds back; a gap that long is given up.
	maxHeldPerTopic = 4096
	// idleTopicAfter is how long a topic without jobs keeps its place in the sequencer; after
	// that its next job reads the baseline again (one Redis read).
	idleTopicAfter = time.Minute
	// maxReorderHold bounds how long a gap whose send still runs on this node is waited for.
	// The send path's request timeout ends every send well before; this only guards against a
	// send that never returns.
	maxReorderHold = 30 * time.Second
)

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
	// InFlight names the seqs this node's send path is still sending; a gap before one of
	// them is waited for past ReorderWait. Nil: every gap gets ReorderWait.
	InFlight *inflight.Sends
	// Pending names the seqs whose sends still run on any node (the seq script marks them):
	// a gap before one of them is waited for past the wait, as for InFlight. Nil: only this
	// node's sends are known, and other nodes' are bounded by Config.SendBound.
	Pending ports.PendingSeqs
	// Owner says which partitions this node consumes when several nodes share the tenants
	// (core/loop/cluster); nil: all of them.
	Owner Owner
	// Gaps records the seqs a consumer goes past without their jobs, for the list repair
	// (seed 003 §20 item 13); nil records none.
	Gaps ports.ListGaps
	// AckWait alerts the users a live push reached whose devices did not acknowledge it in
	// time (DESIGN issue-32 "Native push"); nil: they get none.
	AckWait *AckWait
}

// Owner hands partitions to one node at a time, so each topic has one consumer in the whole
// deployment and keeps its seq order across nodes.
type Owner interface {
	// Holds reports whether this node may take jobs of the partition now.
	Holds(tenant string, partition int) bool
	// Surplus reports whether a held partition should go to another node; its consumer calls
	// Yield once it holds no job.
	Surplus(tenant string, partition int) bool
	Yield(ctx context.Context, tenant string, partition int)
	// Alone reports whether no other node consumes the tenant's queue.
	Alone(tenant string) bool
}

// ownerPoll is how often a consumer whose partition another node holds looks again.
const ownerPoll = 250 * time.Millisecond

// Workers is the deliver worker pool of all tenants.
type Workers struct {
	cfg      Config
	d        Deps
	fallback *Fallback
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New returns a stopped pool.
func New(cfg Config, d Deps) *Workers {
	return &Workers{cfg: cfg.withDefaults(), d: d, fallback: NewFallback(cfg, d)}
}

func (c Config) withDefaults() Config {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.DoneTTL <= 0 {
		c.DoneTTL = 10 * time.Minute
	}
	if c.ReorderWait <= 0 {
		c.ReorderWait = 200 * time.Millisecond
	}
	c.RepairWindow = max(c.RepairWindow, c.DoneTTL)
	return c
}

// Start requeues what a previous process left in processing (and the jobs of an earlier
// partition count), then starts one consumer per tenant and partition. Jobs are never lost by
// a crash: they stay in processing until this boot moves them back.
func (w *Workers) Start(ctx context.Context, tenants []string) error {
	for _, t := range tenants {
		if w.d.Owner != nil && !w.d.Owner.Alone(t) {
			// Other nodes hold partitions now: their processing lists are in use. A partition
			// comes to this node with its processing list requeued (DeliverLeases.Hold).
			continue
		}
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
		for p := range w.d.Queue.Partitions() {
			w.wg.Add(1)
			go w.consume(runCtx, t, p)
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

// maxBatch bounds the jobs a consumer takes before it handles them. What is ready in one pass
// is handled together: the list updates of all its MESSAGE jobs in one call (a big group's
// backlog then costs one script per recipient batch, not one per message), the done marks and
// the acks in one round trip each.
const maxBatch = 64

// consume is the one consumer of a partition on this node. MESSAGE jobs pass through the
// sequencer, so each topic reaches its recipients in seq order; other jobs go straight through.
// A taken job is finished even while stopping, so it does not wait for the next boot; held
// jobs are handled at stop, late rather than never.
func (w *Workers) consume(ctx context.Context, tenant string, partition int) {
	defer w.wg.Done()
	work := context.WithoutCancel(ctx)
	order := newSequencer(w.cfg.ReorderWait, maxHeldPerTopic)
	if w.d.InFlight != nil || w.d.Pending != nil {
		order.sending = func(topic string, from, to int64) bool { return w.sending(ctx, tenant, topic, from, to) }
		order.maxHold = maxReorderHold
	}
	lastForget := w.d.Clock.Now()
	var caughtUp time.Time // every job queued before it was taken
	var gaps []dialog.Gap  // passed, not yet recorded
	for ctx.Err() == nil {
		order.wait = w.reorderWait(tenant)
		if !w.owns(ctx, tenant, partition, order) {
			sleep(ctx, ownerPoll)
			continue
		}
		timeout := w.cfg.TakeTimeout
		if due, ok := order.nextDue(); ok {
			timeout = min(timeout, due.Sub(w.d.Clock.Now())) // ≤ 0: look without waiting
		}
		var ready []delivery.Job
		taken, empty, err := w.take(ctx, tenant, partition, timeout)
		if err != nil && ctx.Err() == nil {
			w.d.Log.WarnContext(ctx, "deliver take failed", "tenant", tenant, "partition", partition, "err", err)
			sleep(ctx, time.Second)
		}
		for _, job := range taken {
			caughtUp = later(caughtUp, time.UnixMilli(job.QueuedAt))
			ready = append(ready, w.sequence(work, order, job)...)
		}
		if empty { // everything queued until now was taken
			caughtUp = later(caughtUp, w.d.Clock.Now())
		}
		ready = append(ready, order.expire(caughtUp, w.d.Clock.Now())...)
		if order.lateSeen() {
			inSeqOrder(ready)
		}
		gaps = w.noteGaps(work, tenant, append(gaps, order.takeGaps()...))
		w.handle(work, order.takeBehind(), ready...)
		if now := w.d.Clock.Now(); now.Sub(lastForget) >= idleTopicAfter {
			order.forget(now.Add(-idleTopicAfter))
			lastForget = now
		}
	}
	held := order.drain()
	if gaps = w.noteGaps(work, tenant, append(gaps, order.takeGaps()...)); len(gaps) > 0 {
		w.d.Log.ErrorContext(work, "deliver gaps not recorded: the list repair will not see them", "tenant", tenant, "partition", partition, "gaps", len(gaps))
	}
	w.handle(work, nil, held...)
}

// noteGaps records gaps before the jobs past them are handled, so a crash in between leaves
// those jobs in processing and the next consumer finds the gaps again. It returns the gaps it
// could not record, to try again with the next pass: the jobs go on meanwhile, since Redis
// refusing the record refuses them too, and only a blip between the two loses a gap.
func (w *Workers) noteGaps(ctx context.Context, tenant string, gaps []dialog.Gap) []dialog.Gap {
	if len(gaps) == 0 || w.d.Gaps == nil {
		return nil
	}
	if err := w.d.Gaps.Note(ctx, tenant, w.d.Clock.Now(), gaps...); err != nil {
		w.d.Log.WarnContext(ctx, "deliver gaps not recorded yet", "tenant", tenant, "gaps", len(gaps), "err", err)
		return gaps
	}
	w.d.Metrics.Add("deliver_list_gap_total", float64(len(gaps)))
	return nil
}

// sending reports whether a send of a seq in [from, to] of topic still runs: on this node, or
// on any node by its pending mark. A mark that cannot be read counts as running: holding is
// bounded by maxReorderHold, while giving up could deliver out of order.
func (w *Workers) sending(ctx context.Context, tenant, topic string, from, to int64) bool {
	if w.d.InFlight != nil && w.d.InFlight.Any(tenant, topic, from, to) {
		return true
	}
	if w.d.Pending == nil {
		return false
	}
	pending, err := w.d.Pending.Pending(ctx, tenant, topic, from, to)
	if err != nil {
		w.d.Log.WarnContext(ctx, "deliver pending seqs unreadable, gap held", "tenant", tenant, "topic", topic, "from", from, "to", to, "err", err)
		return true
	}
	return pending
}

// reorderWait is how long a gap is waited for: longer while other nodes send too.
func (w *Workers) reorderWait(tenant string) time.Duration {
	if w.d.Owner == nil || w.d.Owner.Alone(tenant) {
		return w.cfg.ReorderWait
	}
	return max(w.cfg.ReorderWait, w.cfg.SendBound)
}

// owns reports whether the consumer may take jobs now. A partition that went to another node
// while this consumer held jobs back has them handled first (the new owner requeued them too;
// the done marks keep each from acting twice); a surplus partition is given back once nothing
// is held.
func (w *Workers) owns(ctx context.Context, tenant string, partition int, order *sequencer) bool {
	own := w.d.Owner
	if own == nil {
		return true
	}
	if !own.Holds(tenant, partition) {
		work := context.WithoutCancel(ctx)
		held := order.reset()
		w.noteGaps(work, tenant, order.takeGaps())
		w.handle(work, nil, held...)
		return false
	}
	if own.Surplus(tenant, partition) && order.empty() {
		own.Yield(context.WithoutCancel(ctx), tenant, partition)
		order.reset()
		return false
	}
	return true
}

// take waits up to timeout for a job of the partition, then takes what else is there, up to
// maxBatch in all; empty reports that the partition was found empty.
func (w *Workers) take(ctx context.Context, tenant string, partition int, timeout time.Duration) (jobs []delivery.Job, empty bool, err error) {
	job, ok, err := w.d.Queue.Take(ctx, tenant, partition, timeout)
	if err != nil || !ok {
		return nil, err == nil, err
	}
	more, err := w.d.Queue.TakeMore(ctx, tenant, partition, maxBatch-1)
	return append([]delivery.Job{job}, more...), err == nil && len(more) < maxBatch-1, err
}

// sequence passes a taken job through the sequencer and returns the jobs to handle now.
func (w *Workers) sequence(ctx context.Context, order *sequencer, job delivery.Job) []delivery.Job {
	if job.Kind != delivery.KindMessage || job.Message == nil {
		return []delivery.Job{job}
	}
	now := w.d.Clock.Now()
	if !order.known(job.Topic) {
		order.start(job.Topic, w.baseline(ctx, job), now)
	}
	return order.add(job, now)
}

// baseline is the newest seq of the job's topic handled before it: the seq of its
// conversation's preview, which every handled MESSAGE job moves forward and which outlives this
// process. Without it (Redis unreachable) the job itself is the baseline: it goes out at once.
func (w *Workers) baseline(ctx context.Context, job delivery.Job) int64 {
	last, err := w.d.Dialogs.AppliedSeq(ctx, job.Tenant, job.ConversationID)
	if err != nil {
		w.d.Log.WarnContext(ctx, "deliver order baseline unknown", "tenant", job.Tenant, "topic", job.Topic, "err", err)
		return job.Message.Seq - 1
	}
	return last
}

// target is a job with its recipients.
type target struct {
	job        delivery.Job
	recipients []int64
	batches    []dialog.Batch // list batches of a MESSAGE job
	behind     bool           // it came behind its topic's next seq
}

// handle runs jobs of one tenant, in order. The list updates come first and act once per job
// and recipient batch, whatever happens later; the push is repeated by a rerun (a connection
// drops what it already queued), the MISSED_MESSAGE rows and the notification act once per job
// (deliver:done). A crash anywhere leaves the jobs in processing, and their rerun skips what
// already acted, so unread never counts a message twice. A step that fails retries the jobs it was for; the
// others go on.
func (w *Workers) handle(ctx context.Context, behind map[string]bool, jobs ...delivery.Job) {
	if len(jobs) == 0 {
		return
	}
	started := w.d.Clock.Now()
	targets := w.dropPushed(ctx, w.dropStale(ctx, w.targets(ctx, jobs)))
	for i := range targets {
		targets[i].behind = behind[targets[i].job.DoneKey()]
	}
	muted, targets := w.updateLists(ctx, targets)
	if len(targets) == 0 {
		return
	}
	// Pushed before the done marks are set, so a consumer that dies in between leaves the jobs
	// to be pushed again by the one that takes them over: live pushes are at least once, and a
	// connection drops a MESSAGE it already queued (the session registry), so each device still
	// gets it once. The done marks then say which run writes the MISSED_MESSAGE rows and
	// notifies: one, never both.
	taken := make([]delivery.Job, len(targets))
	keys := make([]string, len(targets))
	pushes := make([]delivery.Addressed, len(targets))
	for i, t := range targets {
		job := t.job
		taken[i], keys[i] = job, job.DoneKey()
		pushes[i] = delivery.Addressed{
			Target: delivery.Target{Recipients: t.recipients, Sender: job.From, ExcludeDevice: job.ExcludeDevice, NotMailbox: job.NotMailbox,
				NotPush: job.NotPush, Muted: muted[job.ConversationID]},
			Push: delivery.Push{Kind: job.Kind, Message: job.Message, Data: job.Event},
		}
	}
	// One call: a connection gets every frame of the pass in one write, in job order.
	outs := w.d.Pusher.PushReach(ctx, taken[0].Tenant, pushes...)
	first, err := w.d.Queue.MarkDone(ctx, taken[0].Tenant, w.cfg.DoneTTL, keys...)
	if err != nil {
		for _, job := range taken {
			w.retry(ctx, job, err)
		}
		return
	}
	for i, out := range outs {
		job := taken[i]
		if !first[i] {
			w.d.Metrics.Inc("deliver_idempotent_skip_total")
			continue
		}
		if isMessage(job) {
			w.fallback.Act(ctx, job.Tenant, delivery.Unreached{
				Message: job.Message, From: job.From, NotMailbox: job.NotMailbox, NotPush: job.NotPush,
				Muted: muted[job.ConversationID], Failed: out.FailedDevices, Offline: out.OfflineUsers,
				Recipients: targets[i].recipients,
			})
		}
	}
	if err := w.d.Queue.Ack(ctx, taken...); err != nil {
		w.d.Log.WarnContext(ctx, "deliver ack failed", "tenant", taken[0].Tenant, "jobs", len(taken), "err", err)
	}
	now := w.d.Clock.Now()
	latency := now.Sub(started).Seconds()
	for _, job := range taken {
		w.d.Metrics.Observe("deliver_job_latency", latency)
		// From queued to handled: queue wait, reorder hold and the handling itself.
		w.d.Metrics.Observe("deliver_delay_seconds", now.Sub(time.UnixMilli(job.QueuedAt)).Seconds())
	}
}

func isMessage(job delivery.Job) bool { return job.Kind == delivery.KindMessage && job.Message != nil }

// targets finds the recipients of each job, once per topic; a job whose members cannot be read
// is retried.
func (w *Workers) targets(ctx context.Context, jobs []delivery.Job) []target {
	type members struct {
		users   []int64
		batches []dialog.Batch
	}
	byTopic := map[string]members{}
	out := make([]target, 0, len(jobs))
	for _, job := range jobs {
		t := target{job: job, recipients: job.Recipients}
		if t.recipients == nil {
			m, ok := byTopic[job.Topic]
			if !ok {
				users, err := w.d.Members.Members(ctx, job.Tenant, job.Topic)
				if err != nil {
					w.retry(ctx, job, err)
					continue
				}
				m = members{users: users, batches: dialog.BatchesOf(users)}
				byTopic[job.Topic] = m
			}
			t.recipients, t.batches = m.users, m.batches
		} else if isMessage(job) {
			t.batches = dialog.BatchesOf(t.recipients)
		}
		out = append(out, t)
	}
	return out
}

// dropStale acks, without acting on them, the MESSAGE jobs queued DoneTTL or more ago whose
// conversation's lists have already gone past them. Such a job is back from a processing list
// after a crash (RequeueStale at a later boot) when the markers that would recognise it have
// expired: acting again would push it and count it unread twice. Its devices that were online
// got it then; the others sync it. A message whose later seqs overtook it this long ago loses
// its unread count and live push the same way, which only costs it being seen by sync. A
// resent job (delivery.Job.Resent) counts from its message's creation: the job it repeats was
// queued then, and its markers may have expired since.
func (w *Workers) dropStale(ctx context.Context, targets []target) []target {
	now := w.d.Clock.Now()
	keep := targets[:0]
	var stale []delivery.Job
	for _, t := range targets {
		job := t.job
		queued := time.UnixMilli(job.QueuedAt)
		if job.Resent && isMessage(job) {
			queued = job.Message.CreatedAt
		}
		if isMessage(job) && job.QueuedAt > 0 && now.Sub(queued) >= w.cfg.DoneTTL {
			applied, err := w.d.Dialogs.AppliedSeq(ctx, job.Tenant, job.ConversationID)
			if err == nil && applied >= job.Message.Seq {
				w.d.Metrics.Inc("deliver_idempotent_skip_total")
				stale = append(stale, job)
				continue
			}
		}
		keep = append(keep, t)
	}
	if len(stale) > 0 {
		if err := w.d.Queue.Ack(ctx, stale...); err != nil {
			w.d.Log.WarnContext(ctx, "deliver ack of stale jobs failed", "tenant", stale[0].Tenant, "jobs", len(stale), "err", err)
		}
	}
	return keep
}

// dropPushed acks, without acting on them, the resent MESSAGE jobs (delivery.Job.Resent) whose
// message an earlier job pushed already: a job marks its done key only after its push. A
// connection drops a MESSAGE it queued before, but a device that reconnected since has a new
// one, which would take the push again (DESIGN §4 step 6: a resend queues nothing more once
// the message was queued). The lists counted the message once either way (their markers). A
// failed read retries the resent jobs, unpushed.
func (w *Workers) dropPushed(ctx context.Context, targets []target) []target {
	var keys []string
	for _, t := range targets {
		if t.job.Resent && isMessage(t.job) {
			keys = append(keys, t.job.DoneKey())
		}
	}
	if len(keys) == 0 {
		return targets
	}
	done, err := w.d.Queue.Done(ctx, targets[0].job.Tenant, keys...)
	keep := targets[:0]
	var pushed []delivery.Job
	i := 0
	for _, t := range targets {
		if !t.job.Resent || !isMessage(t.job) {
			keep = append(keep, t)
			continue
		}
		switch {
		case err != nil:
			w.retry(ctx, t.job, err)
		case done[i]:
			w.d.Metrics.Inc("deliver_idempotent_skip_total")
			pushed = append(pushed, t.job)
		default:
			keep = append(keep, t)
		}
		i++
	}
	if len(pushed) > 0 {
		if err := w.d.Queue.Ack(ctx, pushed...); err != nil {
			w.d.Log.WarnContext(ctx, "deliver ack of jobs pushed before failed", "tenant", pushed[0].Tenant, "jobs", len(pushed), "err", err)
		}
	}
	return keep
}

// updateLists applies the MESSAGE jobs to every recipient's conversation list (seed 003 §11),
// all in one call, and returns who muted each conversation, and the targets left to push: when
// the lists fail, the MESSAGE jobs are retried and only the others go on.
func (w *Workers) updateLists(ctx context.Context, targets []target) (map[int64]map[int64]bool, []target) {
	var updates []dialog.Update
	for _, t := range targets {
		if !isMessage(t.job) {
			continue
		}
		updates = append(updates, dialog.UpdateOf(*t.job.Message, t.job.DoneKey(), w.markerTTL(t), t.batches))
	}
	if len(updates) == 0 {
		return nil, targets
	}
	applied, err := w.d.Dialogs.Apply(ctx, targets[0].job.Tenant, updates...)
	if want := batchCount(updates); err == nil && len(applied) != want {
		err = fmt.Errorf("list store answered %d batches of %d", len(applied), want)
	}
	if err != nil {
		rest := targets[:0:0]
		for _, t := range targets {
			if isMessage(t.job) {
				w.retry(ctx, t.job, err)
			} else {
				rest = append(rest, t)
			}
		}
		return nil, rest
	}
	muted := make(map[int64]map[int64]bool)
	for _, u := range updates {
		if muted[u.ConversationID] == nil {
			muted[u.ConversationID] = make(map[int64]bool)
		}
		for _, a := range applied[:len(u.Batches)] {
			for _, user := range a.Muted {
				muted[u.ConversationID][user] = true
			}
		}
		applied = applied[len(u.Batches):]
	}
	return muted, targets
}

// markerTTL is how long the list markers of t's job live: a job behind its topic's next seq
// is a gap's, which the list repair may re-apply within RepairWindow.
func (w *Workers) markerTTL(t target) time.Duration {
	if t.behind {
		return w.cfg.RepairWindow
	}
	return w.cfg.DoneTTL
}

func batchCount(us []dialog.Update) int {
	n := 0
	for _, u := range us {
		n += len(u.Batches)
	}
	return n
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

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
