// Package jobs runs operator operations in the background of a node — archive, restore,
// retention, reindex — so a command outlives its HTTP request and can report progress.
package jobs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
)

// Job is one operation running in the background of this node.
type Job struct {
	ID         string
	Tenant     string
	Op         string
	Target     string // the month, or "" for a tenant-wide operation
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
	Progress   Progress
	Err        error
	Result     any // what the operation returned, e.g. a manifest summary

	done chan struct{}
}

// Running reports whether the job has not finished.
func (j Job) Running() bool { return j.FinishedAt.IsZero() }

// Jobs runs operations in the background, at most one per tenant, op and target at a time,
// and keeps finished ones for a while so their outcome can be read.
type Jobs struct {
	clock func() time.Time
	keep  time.Duration
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup

	mu   sync.Mutex
	seq  int64
	jobs map[string]*Job
}

// DefaultKeep is how long a finished job stays readable.
const DefaultKeep = time.Hour

// NewJobs returns an empty registry; Close cancels what still runs.
func NewJobs(clock func() time.Time, keep time.Duration) *Jobs {
	if keep <= 0 {
		keep = DefaultKeep
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Jobs{clock: clock, keep: keep, ctx: ctx, stop: stop, jobs: map[string]*Job{}}
}

// Work is an operation: it reports progress and returns its result.
type Work func(ctx context.Context, report Reporter) (any, error)

// Start runs work unless the same operation on the same target is running already, in which
// case that job is returned.
func (js *Jobs) Start(tenant, op, target string, work Work) Job {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.expire()
	for _, j := range js.jobs {
		if j.Tenant == tenant && j.Op == op && j.Target == target && j.Running() {
			return *j
		}
	}
	js.seq++
	j := &Job{ID: fmt.Sprintf("%s-%s-%d", op, tenant, js.seq), Tenant: tenant, Op: op, Target: target, StartedAt: js.clock(), done: make(chan struct{})}
	js.jobs[j.ID] = j
	js.wg.Go(func() {
		res, err := work(js.ctx, func(p Progress) {
			js.mu.Lock()
			j.Progress = p
			js.mu.Unlock()
		})
		js.mu.Lock()
		j.Result, j.Err, j.FinishedAt = res, err, js.clock()
		js.mu.Unlock()
		close(j.done)
	})
	return *j
}

// Wait returns the job once it finished or after at most d, whichever comes first.
func (js *Jobs) Wait(ctx context.Context, id string, d time.Duration) (Job, error) {
	js.mu.Lock()
	j, ok := js.jobs[id]
	js.mu.Unlock()
	if !ok {
		return Job{}, apperr.New(apperr.NotFound, "no such job")
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-j.done:
	case <-t.C:
	case <-ctx.Done():
	}
	return js.Get(id)
}

// Get returns a snapshot of a job.
func (js *Jobs) Get(id string) (Job, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j, ok := js.jobs[id]
	if !ok {
		return Job{}, apperr.New(apperr.NotFound, "no such job")
	}
	return *j, nil
}

// expire forgets finished jobs older than keep; the caller holds js.mu.
func (js *Jobs) expire() {
	now := js.clock()
	for id, j := range js.jobs {
		if !j.Running() && now.Sub(j.FinishedAt) > js.keep {
			delete(js.jobs, id)
		}
	}
}

// Close cancels the running jobs and waits for them.
func (js *Jobs) Close() {
	js.stop()
	js.wg.Wait()
}

// Progress reports how far an operation got.
type Progress struct {
	Phase       string `json:"phase"`
	TopicsDone  int    `json:"topics_done"`
	TopicsTotal int    `json:"topics_total"`
	Rows        int64  `json:"rows"`
	Chunks      int    `json:"chunks"`
}

// Reporter receives progress; nil reports nowhere.
type Reporter func(Progress)

// Report passes p on.
func (r Reporter) Report(p Progress) {
	if r != nil {
		r(p)
	}
}
