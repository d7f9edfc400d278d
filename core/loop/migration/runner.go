package migration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/kit/periodic"
)

// Run supervises the jobs of the tenants that tenants names at each pass (so a tenant
// provisioned at run time is supervised too) until ctx ends: every PollInterval, and at once
// after a command, it starts a runner for each tenant whose job has work and no runner in
// this process; the store's lease keeps other nodes from running it too. It returns once its
// runners have stopped.
func (s *Service) Run(ctx context.Context, tenants func() []string) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		for _, t := range tenants() {
			s.supervise(ctx, &wg, t)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.wake:
		}
	}
}

func (s *Service) supervise(ctx context.Context, wg *sync.WaitGroup, tenant string) {
	job, err := s.d.Store.Job(ctx, tenant)
	if err != nil {
		if ctx.Err() == nil {
			s.d.Log.WarnContext(ctx, "migration job unreadable", "tenant", tenant, "err", err)
		}
		return
	}
	if !job.Phase.Running() || !s.claim(tenant) {
		// A local runner shows its own phase changes; this read may predate them.
		if !s.isRunning(tenant) {
			s.setStateGauge(tenant, job.Phase)
		}
		return
	}
	s.setStateGauge(tenant, job.Phase)
	release, ok, err := s.d.Store.Lease(ctx, tenant)
	if err != nil || !ok {
		s.unclaim(tenant)
		if err != nil && ctx.Err() == nil {
			s.d.Log.WarnContext(ctx, "migration lease unavailable", "tenant", tenant, "err", err)
		}
		return
	}
	wg.Go(func() {
		defer s.unclaim(tenant)
		defer release()
		s.runTenant(ctx, tenant)
	})
}

func (s *Service) claim(tenant string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[tenant] {
		return false
	}
	s.running[tenant] = true
	return true
}

func (s *Service) isRunning(tenant string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[tenant]
}

func (s *Service) unclaim(tenant string) {
	s.mu.Lock()
	delete(s.running, tenant)
	s.mu.Unlock()
}

// Step does one pass of the tenant's job in the caller's goroutine: one batch (preparing
// first if needed), or verifying what is due, exactly as a pass of Run's runner. more=false
// when the job needs nothing more now. It neither paces, retries nor takes the lease: a caller
// that drives jobs pass by pass (the deterministic simulator) runs one pass at a time itself.
// An error leaves the job where it was, to be retried by the next pass.
func (s *Service) Step(ctx context.Context, tenant string) (more bool, err error) {
	return s.newRunner(tenant, pacer{}).step(ctx)
}

func (s *Service) newRunner(tenant string, pace pacer) *runner {
	return &runner{s: s, tenant: tenant, pace: pace}
}

// runTenant works the job pass by pass (the passes Step runs) until it leaves the running
// phases or ctx ends. Errors are retried after a pause; maxFailures in a row fail the job so
// an operator looks at it.
func (s *Service) runTenant(ctx context.Context, tenant string) {
	r := s.newRunner(tenant, pacer{rate: s.cfg.RowsPerSecond})
	failures := 0
	for ctx.Err() == nil {
		more, err := r.step(ctx)
		if err == nil {
			failures = 0
			if !more {
				return
			}
			continue
		}
		if ctx.Err() != nil || errors.Is(err, errMismatch) {
			return // a mismatch has failed the job with its report already
		}
		failures++
		s.d.Log.ErrorContext(ctx, "migration step failed", "tenant", tenant, "failures", failures, "err", err)
		if failures >= maxFailures {
			if _, ferr := s.setPhase(ctx, tenant, legacy.PhaseChange{
				From: []legacy.Phase{legacy.PhaseCopying, legacy.PhaseVerifying}, To: legacy.PhaseFailed, Error: err.Error(),
			}); ferr != nil {
				s.d.Log.ErrorContext(ctx, "migration could not be marked failed", "tenant", tenant, "err", ferr)
			}
			return
		}
		if periodic.Sleep(ctx, s.cfg.FailureBackoff) != nil {
			return
		}
	}
}

// runner is one tenant's job in this process.
type runner struct {
	s      *Service
	tenant string
	pace   pacer
	// verified maps each month to whether it verified OK, read once per runner rather than
	// after every batch.
	verified map[month.Month]bool
}

// step does one unit of work: one batch, or verifying what is due. more=false when the job
// needs nothing more from this runner.
func (r *runner) step(ctx context.Context) (more bool, err error) {
	job, err := r.s.d.Store.Job(ctx, r.tenant)
	if err != nil {
		return false, fmt.Errorf("read job: %w", err)
	}
	r.s.countRows(r.tenant, job)
	switch job.Phase {
	case legacy.PhaseCopying:
		if !job.Prepared {
			if err := r.prepare(ctx); err != nil {
				return false, err
			}
		}
		return true, r.copyBatch(ctx)
	case legacy.PhaseVerifying:
		return false, r.verifyAll(ctx)
	}
	return false, nil
}

// copyBatch copies one batch and verifies the months the cursor has left behind, so a
// mismatch stops the copy early.
func (r *runner) copyBatch(ctx context.Context) error {
	b, err := r.s.d.Store.CopyBatch(ctx, r.tenant, r.s.cfg.BatchSize)
	if errors.Is(err, legacy.ErrPhaseChanged) {
		return nil // paused meanwhile: the next step reads the phase and stops
	}
	if err != nil {
		return fmt.Errorf("copy batch: %w", err)
	}
	r.s.d.Metrics.Observe("migration_batch_latency", b.Took.Seconds())
	r.s.countBatch(r.tenant, b)
	if len(b.FailedKeys) > 0 {
		r.s.d.Log.WarnContext(ctx, "legacy rows not copied: their seq or client_msg_id is taken in the month table",
			"tenant", r.tenant, "failed", b.Failed, "first", b.FailedKeys)
	}
	if b.Rows == 0 {
		_, err := r.s.setPhase(ctx, r.tenant, legacy.PhaseChange{From: []legacy.Phase{legacy.PhaseCopying}, To: legacy.PhaseVerifying})
		if err != nil && !errors.Is(err, legacy.ErrPhaseChanged) {
			return fmt.Errorf("copy complete: %w", err)
		}
		r.s.d.Log.InfoContext(ctx, "migration copy complete", "tenant", r.tenant)
		return nil
	}
	if err := r.verifyBefore(ctx, month.Of(b.End.CreatedAt)); err != nil {
		return err
	}
	return r.pace.wait(ctx, b.Rows, b.Took)
}

// prepare does what must follow the cutover before rows move: the month tables of every legacy
// month exist (months older than the shard manager's window are sealed: no live write belongs
// there), every topic's seq counter is at least its watermark, and every topic's Redis route
// names its legacy months. Each part is idempotent, so a crash here repeats it.
func (r *runner) prepare(ctx context.Context) error {
	if err := r.s.d.Store.PrepareTable(ctx, r.tenant); err != nil {
		return fmt.Errorf("prepare legacy table: %w", err)
	}
	if err := r.ensureMonths(ctx); err != nil {
		return err
	}
	if err := r.eachTopic(ctx, func(w legacy.TopicSeq) error {
		if err := r.s.d.Seq.Reseed(ctx, r.tenant, w.Topic, w.Seq); err != nil {
			return fmt.Errorf("raise seq counter of %s to %d: %w", w.Topic, w.Seq, err)
		}
		return r.rebuildRoute(ctx, w.Topic)
	}); err != nil {
		return err
	}
	if err := r.s.d.Store.MarkPrepared(ctx, r.tenant); err != nil {
		return fmt.Errorf("mark prepared: %w", err)
	}
	r.s.d.Log.InfoContext(ctx, "migration prepared: month tables, seq counters and routes", "tenant", r.tenant)
	return nil
}

func (r *runner) ensureMonths(ctx context.Context) error {
	p, err := r.s.d.Store.Progress(ctx, r.tenant)
	if err != nil {
		return fmt.Errorf("read months: %w", err)
	}
	catalog, err := r.s.d.Shards.Catalog(ctx, r.tenant)
	if err != nil {
		return fmt.Errorf("read catalog: %w", err)
	}
	known := make(map[month.Month]bool, len(catalog))
	for _, in := range catalog {
		known[in.Month] = true
	}
	active, found, err := r.s.d.Months.Active(ctx, r.tenant)
	if err != nil {
		return fmt.Errorf("active month: %w", err)
	}
	if !found {
		now, err := r.s.d.Months.Now(ctx)
		if err != nil {
			return fmt.Errorf("redis time: %w", err)
		}
		active = month.Of(now)
	}
	for _, mp := range p.Months {
		if known[mp.Month] {
			continue // its state is the shard manager's
		}
		if err := r.s.d.Shards.EnsureTable(ctx, r.tenant, mp.Month); err != nil {
			return fmt.Errorf("month table %s: %w", mp.Month, err)
		}
		if mp.Month >= active.Prev() {
			continue // the shard manager moves the recent months itself
		}
		if err := r.s.d.Shards.SetState(ctx, r.tenant, mp.Month, shard.Prepared, shard.Sealed); err != nil {
			// The shard manager may have moved it meanwhile; it seals old months itself.
			r.s.d.Log.WarnContext(ctx, "old month not sealed by the migration", "tenant", r.tenant, "month", mp.Month.String(), "err", err)
		}
	}
	return nil
}

// rebuildRoute rewrites the topic's Redis route; one whose writes kept racing goes to the
// repair loop instead.
func (r *runner) rebuildRoute(ctx context.Context, topic string) error {
	if _, err := r.s.d.Routes.Rebuild(ctx, r.tenant, topic); err != nil {
		if qerr := r.s.d.Routes.Enqueue(ctx, r.tenant, topic); qerr != nil {
			return fmt.Errorf("rebuild route of %s: %w (and queueing it failed: %v)", topic, err, qerr)
		}
	}
	return nil
}

// eachTopic calls fn for every topic with a watermark, in topic order.
func (r *runner) eachTopic(ctx context.Context, fn func(legacy.TopicSeq) error) error {
	after := ""
	for {
		page, err := r.s.d.Store.Watermarks(ctx, r.tenant, after, pageSize)
		if err != nil {
			return fmt.Errorf("read watermarks after %q: %w", after, err)
		}
		for _, w := range page {
			if err := fn(w); err != nil {
				return err
			}
		}
		if len(page) < pageSize {
			return nil
		}
		after = page[len(page)-1].Topic
	}
}

// pacer holds the copy to rate rows per second, measured per batch.
type pacer struct{ rate int }

func (p pacer) wait(ctx context.Context, rows int, took time.Duration) error {
	if p.rate <= 0 {
		return nil
	}
	want := time.Duration(float64(rows) / float64(p.rate) * float64(time.Second))
	return periodic.Sleep(ctx, want-took)
}

// countedRows is what this process has added to migration_rows_total for one run of a
// tenant's job.
type countedRows struct {
	run                     int
	copied, skipped, failed int64
}

// countRows brings migration_rows_total up to the job's persisted counts, which the batches
// advance in their own transactions. The counter thus counts the job, not the process: a node
// that takes a job over (after a restart or a crash of the node that ran it) starts from the
// rows already handled instead of from 0, and no batch is counted twice. A rerun's counts
// start again from 0 in the job and are added on top, so the counter never goes down.
func (s *Service) countRows(tenant string, job legacy.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counted[tenant]
	if c.run != job.Run {
		c = countedRows{run: job.Run}
	}
	s.counted[tenant] = s.addRows(c, job.Copied-c.copied, job.Skipped-c.skipped, job.Failed-c.failed)
}

// countBatch counts a batch this process just committed, of the run countRows last saw.
func (s *Service) countBatch(tenant string, b legacy.Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counted[tenant] = s.addRows(s.counted[tenant], int64(b.Copied), int64(b.Skipped), int64(b.Failed))
}

func (s *Service) addRows(c countedRows, copied, skipped, failed int64) countedRows {
	for _, add := range []struct {
		status string
		n      int64
		have   *int64
	}{{"copied", copied, &c.copied}, {"skipped", skipped, &c.skipped}, {"failed", failed, &c.failed}} {
		if add.n > 0 {
			s.d.Metrics.Add("migration_rows_total", float64(add.n), add.status)
			*add.have += add.n
		}
	}
	return c
}
