// Package migration moves a tenant's legacy single table im_group_messages into the month
// tables while imd serves (seed 000 §9): it records the cutover watermark, backfills the rows in
// rate-limited batches by a (created_at, message_id) cursor, verifies every month against the
// legacy table, rebuilds the routes, and finally retires the legacy table. The operator's
// commands (plan, start, pause, resume, status, verify, finish) only change the job's phase;
// a runner per tenant, on whichever node takes the tenant's lease, does the work, so a job
// survives restarts and a killed process is picked up again.
package migration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

// Batch size bounds (seed 000 §9: 1,000 to 5,000 rows per batch) and defaults.
const (
	MinBatchSize          = 1000
	MaxBatchSize          = 5000
	DefaultBatchSize      = 2000
	DefaultRowsPerSecond  = 20_000
	DefaultPollInterval   = 5 * time.Second
	DefaultFailureBackoff = 2 * time.Second
	// maxFailures is how many runner errors in a row fail the job; a lone error (a deadlock, a
	// restart of MySQL) is retried.
	maxFailures = 5
	// pageSize is how many topics one read of the watermarks returns.
	pageSize = 1000
)

// Config tunes the job; zero fields take the defaults.
type Config struct {
	// BatchSize is the rows one copy transaction takes: MinBatchSize–MaxBatchSize in a
	// configuration file (seed 000 §9), at most MaxBatchSize here.
	BatchSize int
	// RowsPerSecond caps the copy rate to protect live traffic; negative means no cap.
	RowsPerSecond int
	// PollInterval is how often the supervisor looks for jobs to run.
	PollInterval time.Duration
	// FailureBackoff is the pause after a runner error before it tries again.
	FailureBackoff time.Duration
}

func (c Config) withDefaults() Config {
	// The file's bounds are the config's to check (MinBatchSize–MaxBatchSize); a smaller batch
	// is a test's or the simulator's, to cut a table's copy into several batches.
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	c.BatchSize = min(c.BatchSize, MaxBatchSize)
	if c.RowsPerSecond == 0 {
		c.RowsPerSecond = DefaultRowsPerSecond
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.FailureBackoff <= 0 {
		c.FailureBackoff = DefaultFailureBackoff
	}
	return c
}

// Routes rebuilds Redis routes from the mirror (core/loop/routerepair), whose segments include the
// legacy months while dual read is on.
type Routes interface {
	Rebuild(ctx context.Context, tenant, topic string) (route.Route, error)
	// Enqueue hands a topic whose rebuild kept racing writes to the repair loop.
	Enqueue(ctx context.Context, tenant, topic string) error
}

// Deps are the ports the job uses.
type Deps struct {
	Store   ports.MigrationStore
	Shards  ports.ShardStore
	Months  ports.MonthState
	Seq     ports.SeqAllocator
	Routes  Routes
	Metrics ports.Metrics
	// IDs decodes msg_ids, so the plan can warn of legacy ids imd's own would sort before.
	IDs   ports.IDGenerator
	Clock ports.Clock
	Log   *slog.Logger
	// DualRead says whether this node merges the legacy table into reads. Starting a copy
	// without it would hide rows between the cutover and their copy.
	DualRead DualReading
}

// DualReading is migration.dual_read: whether reads merge the legacy table.
type DualReading bool

// Service runs tenants' migrations.
type Service struct {
	cfg Config
	d   Deps

	wake chan struct{} // nudges the supervisor after a command

	mu      sync.Mutex
	running map[string]bool        // tenants with a runner in this process
	counted map[string]countedRows // what migration_rows_total holds of each tenant's run
	// verifying is the month each tenant's runner in this process is comparing.
	verifying map[string]*verifyCount
}

// New returns the service; Run must run for jobs to make progress.
func New(cfg Config, d Deps) *Service {
	return &Service{cfg: cfg.withDefaults(), d: d, wake: make(chan struct{}, 1), running: make(map[string]bool),
		counted: make(map[string]countedRows), verifying: make(map[string]*verifyCount)}
}

// Plan reads what a migration of the tenant would do.
func (s *Service) Plan(ctx context.Context, tenant string) (legacy.Plan, error) {
	p, err := s.d.Store.Plan(ctx, tenant)
	if err != nil {
		return legacy.Plan{}, apperr.Wrap(apperr.Busy, "reading the legacy table failed", err)
	}
	// imd refuses to start while its clock is behind the newest stored msg_id (DESIGN §1): a
	// legacy id that decodes to a later time would stop every node once copied.
	if p.MaxMsgID > 0 {
		if at, now := s.d.IDs.TimeOf(p.MaxMsgID), s.d.Clock.Now(); at.After(now) {
			p.Warnings = append(p.Warnings, fmt.Sprintf(
				"the largest legacy msg_id %d decodes to %s, after now: once copied, imd would refuse to start; "+
					"its msg_ids must come from the same generator layout", p.MaxMsgID, at.UTC().Format(time.RFC3339)))
		}
	}
	return p, nil
}

// Status reads the job, its months and its speed.
func (s *Service) Status(ctx context.Context, tenant string) (legacy.Progress, error) {
	p, err := s.d.Store.Progress(ctx, tenant)
	if err != nil {
		return legacy.Progress{}, apperr.Wrap(apperr.Busy, "reading the migration failed", err)
	}
	s.mu.Lock()
	if v := s.verifying[tenant]; v != nil {
		p.Verifying = &legacy.VerifyProgress{Month: v.month, Rows: v.rows.Load()}
	}
	s.mu.Unlock()
	return p, nil
}

// Start records the cutover if none is recorded yet and starts the copy; a job already running
// or verified is left as it is. rerun starts a stopped copy (paused, failed or verified) over
// from the first row: every row is then skipped or copied again idempotently, and verified
// again.
func (s *Service) Start(ctx context.Context, tenant string, rerun bool) (legacy.Job, error) {
	if !s.d.DualRead {
		return legacy.Job{}, apperr.New(apperr.Conflict, "dual read is off: set migration.dual_read on every node before starting")
	}
	job, err := s.d.Store.Job(ctx, tenant)
	if err != nil {
		return legacy.Job{}, apperr.Wrap(apperr.Busy, "reading the migration failed", err)
	}
	switch {
	case job.Phase == legacy.PhaseNone:
		job, err = s.d.Store.Cutover(ctx, tenant)
		if errors.Is(err, legacy.ErrNoTable) {
			return legacy.Job{}, apperr.New(apperr.NotFound, "the tenant has no legacy table "+legacy.Table)
		}
		if err != nil {
			return legacy.Job{}, apperr.Wrap(apperr.Busy, "recording the cutover failed", err)
		}
		s.d.Log.InfoContext(ctx, "migration cutover recorded", "tenant", tenant, "rows", job.Rows, "topics", job.Topics, "cutover_at", job.CutoverAt)
	case rerun:
		job, err = s.d.Store.Rerun(ctx, tenant, []legacy.Phase{legacy.PhasePaused, legacy.PhaseVerified, legacy.PhaseFailed})
		if err != nil {
			return legacy.Job{}, phaseErr("rerun", err)
		}
		s.d.Log.InfoContext(ctx, "migration rerun from the first row", "tenant", tenant, "run", job.Run)
	case job.Phase == legacy.PhaseFinished:
		return legacy.Job{}, apperr.New(apperr.Conflict, "the migration is finished")
	case job.Phase == legacy.PhasePaused, job.Phase == legacy.PhaseFailed:
		return legacy.Job{}, apperr.New(apperr.Conflict, fmt.Sprintf("the migration is %s: resume it, or start it over with rerun", job.Phase))
	}
	s.setStateGauge(tenant, job.Phase)
	s.nudge()
	return job, nil
}

// Pause stops the copy after the batch in flight; resume continues at the cursor.
func (s *Service) Pause(ctx context.Context, tenant string) (legacy.Job, error) {
	job, err := s.setPhase(ctx, tenant, legacy.PhaseChange{From: []legacy.Phase{legacy.PhaseCopying}, To: legacy.PhasePaused})
	if err != nil {
		return legacy.Job{}, phaseErr("pause", err)
	}
	return job, nil
}

// Resume continues a paused or failed job: copying where the copy stopped, or verifying when
// the copy was complete.
func (s *Service) Resume(ctx context.Context, tenant string) (legacy.Job, error) {
	if !s.d.DualRead {
		return legacy.Job{}, apperr.New(apperr.Conflict, "dual read is off: set migration.dual_read on every node before resuming")
	}
	job, err := s.d.Store.Job(ctx, tenant)
	if err != nil {
		return legacy.Job{}, apperr.Wrap(apperr.Busy, "reading the migration failed", err)
	}
	to := legacy.PhaseCopying
	if job.CopyDone {
		to = legacy.PhaseVerifying
	}
	job, err = s.setPhase(ctx, tenant, legacy.PhaseChange{From: []legacy.Phase{legacy.PhasePaused, legacy.PhaseFailed}, To: to})
	if err != nil {
		return legacy.Job{}, phaseErr("resume", err)
	}
	s.nudge()
	return job, nil
}

// Verify compares every month again, e.g. after an operator repaired a mismatch.
func (s *Service) Verify(ctx context.Context, tenant string) (legacy.Job, error) {
	// A job that failed while copying goes back to copying, its months verified as the copy
	// passes them.
	job, err := s.d.Store.Reverify(ctx, tenant, []legacy.Phase{legacy.PhaseVerified, legacy.PhaseFailed})
	if err != nil {
		return legacy.Job{}, phaseErr("verify", err)
	}
	s.setStateGauge(tenant, job.Phase)
	s.nudge()
	return job, nil
}

// Finish stops reading the legacy table and renames it legacy.RetiredTable (kept, read-only
// by convention; nothing drops it). Only a fully verified job finishes; finishing again
// completes a rename an earlier call did not get to.
func (s *Service) Finish(ctx context.Context, tenant string) (legacy.Job, error) {
	job, err := s.d.Store.Job(ctx, tenant)
	if err != nil {
		return legacy.Job{}, apperr.Wrap(apperr.Busy, "reading the migration failed", err)
	}
	if job.Phase != legacy.PhaseFinished {
		// Phase first: every node stops reading the legacy table before it is renamed.
		job, err = s.setPhase(ctx, tenant, legacy.PhaseChange{From: []legacy.Phase{legacy.PhaseVerified}, To: legacy.PhaseFinished})
		if err != nil {
			return legacy.Job{}, phaseErr("finish (only a verified migration finishes)", err)
		}
	}
	if err := s.d.Store.Finish(ctx, tenant); err != nil {
		return legacy.Job{}, apperr.Wrap(apperr.Busy, "renaming the legacy table failed; finish again", err)
	}
	s.d.Log.InfoContext(ctx, "migration finished; legacy table retired", "tenant", tenant, "table", legacy.RetiredTable)
	return job, nil
}

// phaseErr turns a refused phase change into 40901 and anything else into 50301.
func phaseErr(what string, err error) error {
	if errors.Is(err, legacy.ErrPhaseChanged) {
		return apperr.Wrap(apperr.Conflict, fmt.Sprintf("cannot %s now: %v", what, err), err)
	}
	return apperr.Wrap(apperr.Busy, what+" failed", err)
}

// setPhase changes the job's phase and shows it on the gauge.
func (s *Service) setPhase(ctx context.Context, tenant string, c legacy.PhaseChange) (legacy.Job, error) {
	job, err := s.d.Store.SetPhase(ctx, tenant, c)
	if err == nil {
		s.setStateGauge(tenant, job.Phase)
	}
	return job, err
}

func (s *Service) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// setStateGauge shows the tenant's phase as migration_state{tenant, phase} = 1, others 0.
func (s *Service) setStateGauge(tenant string, current legacy.Phase) {
	for _, p := range legacy.Phases {
		v := 0.0
		if p == current {
			v = 1
		}
		s.d.Metrics.Set("migration_state", v, tenant, string(p))
	}
}
