// Package runtime runs what a node does in the background for the tenants it serves: the
// loops of each tenant (shard manager, route repair, deliver consumers) and the loops over all
// of them (migration, retention, search index feed, stats flush). Configured tenants and
// tenants provisioned at run time go through the same Add, so no tenant misses a loop, and a
// loop that fails is reported and restarted after a backoff instead of silently ending.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// TenantLoop is work one tenant needs while this node serves it. Run works until ctx ends;
// returning earlier, with an error or not, is a failure.
type TenantLoop struct {
	Name string
	Run  func(ctx context.Context, tenant string) error
}

// NodeLoop is work over every served tenant (tenants answers the current set, which grows as
// tenants are added) or over none. Run works until ctx ends, like TenantLoop's.
type NodeLoop struct {
	Name string
	Run  func(ctx context.Context, tenants func() []string) error
}

// Config of the restart backoff: the first restart waits Backoff, each further failure in a
// row doubles it up to MaxBackoff. A run that lasted MaxBackoff resets it.
type Config struct {
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// Deps are what the runtime runs and reports to.
type Deps struct {
	// Prepare readies a tenant before its loops start (database, clock check, month tables).
	// Its error refuses the tenant; it must be idempotent, since provisioning is retried.
	Prepare func(ctx context.Context, t tenant.Info) error
	Tenant  []TenantLoop
	Node    []NodeLoop
	Metrics ports.Metrics
	Log     *slog.Logger
	// After is the backoff's timer; nil is time.After.
	After func(time.Duration) <-chan time.Time
	// Now measures how long a run lasted; nil is time.Now.
	Now func() time.Time
}

// ErrStopped refuses a tenant added after Stop.
var ErrStopped = errors.New("runtime stopped")

// restartMetric counts loop failures, each followed by a restart (labels loop, tenant; tenant
// is empty for a node loop).
const restartMetric = "tenant_loop_restarts_total"

// Runtime starts and stops the loops. Tenants added before Start are prepared at once and
// their loops start with Start.
type Runtime struct {
	cfg Config
	d   Deps

	mu      sync.Mutex
	ctx     context.Context // set by Start, nil before
	cancel  context.CancelFunc
	stopped bool
	tenants []string // added, in order
	loops   sync.WaitGroup
}

// New returns a runtime that runs nothing until Start.
func New(cfg Config, d Deps) *Runtime {
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.MaxBackoff < cfg.Backoff {
		cfg.MaxBackoff = max(cfg.Backoff, time.Minute)
	}
	if d.After == nil {
		d.After = time.After
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Runtime{cfg: cfg, d: d}
}

// Add prepares t and starts its loops (at Start when it has not run yet). A tenant already
// added is prepared again and keeps its loops, so a retried provisioning is safe. It has the
// shape of the tenant registry's Activator.
func (r *Runtime) Add(ctx context.Context, t tenant.Info) error {
	if r.d.Prepare != nil {
		if err := r.d.Prepare(ctx, t); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return fmt.Errorf("tenant %s: %w", t.Name, ErrStopped)
	}
	if slices.Contains(r.tenants, t.Name) {
		return nil
	}
	r.tenants = append(r.tenants, t.Name)
	if r.ctx != nil {
		r.launchTenant(t.Name)
	}
	return nil
}

// Tenants are the tenants added so far.
func (r *Runtime) Tenants() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.tenants)
}

// Start launches the node loops and the loops of the tenants added so far; they run until
// Stop. ctx only bounds the start (the loops outlive it).
func (r *Runtime) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx != nil || r.stopped {
		return errors.New("runtime started twice")
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for _, l := range r.d.Node {
		r.supervise(l.Name, "", func(ctx context.Context) error { return l.Run(ctx, r.Tenants) })
	}
	for _, t := range r.tenants {
		r.launchTenant(t)
	}
	return nil
}

// Stop ends every loop and waits for them, at most until ctx ends.
func (r *Runtime) Stop(ctx context.Context) error {
	r.mu.Lock()
	r.stopped = true
	if r.cancel != nil {
		r.cancel()
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.loops.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tenant loops still stopping: %w", ctx.Err())
	}
}

// launchTenant starts the tenant's loops; the caller holds r.mu and has set r.ctx.
func (r *Runtime) launchTenant(name string) {
	for _, l := range r.d.Tenant {
		r.supervise(l.Name, name, func(ctx context.Context) error { return l.Run(ctx, name) })
	}
}

// supervise runs one loop until the runtime stops, restarting it after each failure.
func (r *Runtime) supervise(loop, tenantName string, run func(context.Context) error) {
	ctx := r.ctx
	r.loops.Go(func() {
		wait := r.cfg.Backoff
		for {
			began := r.d.Now()
			err := runSafely(ctx, run)
			if ctx.Err() != nil {
				if err != nil && !errors.Is(err, context.Canceled) {
					r.d.Log.WarnContext(ctx, "tenant loop stopped with an error", "loop", loop, "tenant", tenantName, "err", err)
				}
				return
			}
			if r.d.Now().Sub(began) >= r.cfg.MaxBackoff {
				wait = r.cfg.Backoff
			}
			if err == nil {
				err = errors.New("returned before stop")
			}
			if r.d.Metrics != nil {
				r.d.Metrics.Inc(restartMetric, loop, tenantName)
			}
			r.d.Log.ErrorContext(ctx, "tenant loop failed; restarting", "loop", loop, "tenant", tenantName, "backoff", wait, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-r.d.After(wait):
			}
			wait = min(wait*2, r.cfg.MaxBackoff)
		}
	})
}

// runSafely turns a panic of the loop into its failure, so one bad pass does not end the
// process with every other tenant's loops.
func runSafely(ctx context.Context, run func(context.Context) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return run(ctx)
}
