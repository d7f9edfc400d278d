// Package deliver runs the fan-out side of seed 003 §12: workers take jobs from the reliable
// queue, act on each message at most once, and push to connected devices.
package deliver

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"imd/core/delivery"
	"imd/core/membership"
	"imd/ports"
)

// Config sizes the worker pool (seed 003 §19 deliver).
type Config struct {
	Workers     int           // per tenant
	TakeTimeout time.Duration // BLMOVE wait, bounds how long Stop waits for an idle worker
	DoneTTL     time.Duration // lifetime of deliver:done:{msg_id}
	MaxAttempts int           // then the job goes to the dead-letter list
}

// Deps are the ports the workers use.
type Deps struct {
	Queue   ports.DeliverQueue
	Pusher  ports.Pusher
	Members *membership.Cache
	Metrics ports.Metrics
	Clock   ports.Clock
	Log     *slog.Logger
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
	first, err := w.d.Queue.MarkDone(ctx, job.Tenant, job.DoneKey(), w.cfg.DoneTTL)
	if err != nil {
		w.retry(ctx, job, err)
		return
	}
	if first {
		w.d.Pusher.Push(ctx, job.Tenant, delivery.Target{
			Recipients: recipients, Sender: job.From, ExcludeDevice: job.ExcludeDevice,
		}, delivery.Push{Kind: job.Kind, Message: job.Message, Data: job.Event})
	} else {
		w.d.Metrics.Inc("deliver_idempotent_skip_total")
	}
	if err := w.d.Queue.Ack(ctx, job); err != nil {
		w.d.Log.WarnContext(ctx, "deliver ack failed", "tenant", job.Tenant, "msg_id", job.MsgID, "err", err)
	}
	w.d.Metrics.Observe("deliver_job_latency", w.d.Clock.Now().Sub(started).Seconds())
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
