// Package routerepair keeps the Redis routes of every topic in line with the MySQL mirror
// (seed 000 §3.4 rules 2–4): a queue of topics whose route update failed after COMMIT or whose
// route a query found missing, worked in the background; a tenant-wide rebuild when Redis has
// lost the routes; and a sampled reconciliation of Redis, mirror and month tables.
package routerepair

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/kit/topicsample"
	"github.com/imdhq/imd/ports"
)

// Config of the repair loop and the reconciliation; zero fields take the defaults, except
// ReconcileDeep, whose zero turns the month-table comparison off.
type Config struct {
	// Interval between passes over the repair queue.
	Interval time.Duration
	// Batch is how many queued topics one pass rebuilds per tenant.
	Batch int
	// FallbackLimit bounds the topics kept in process while Redis refuses the queue.
	FallbackLimit int
	// RebuildBatch is the page size of a tenant-wide rebuild.
	RebuildBatch int
	// ReconcileInterval is the time between sampled reconciliations.
	ReconcileInterval time.Duration
	// ReconcileSample is how many topics of recent months one reconciliation compares.
	ReconcileSample int
	// ReconcileDeep is how many of those are also compared with the month tables themselves,
	// which reads every row the topic has in the month; 0 leaves the tables alone.
	ReconcileDeep int
	// ReconcileMonths is how many months are sampled: the active one and those before it.
	ReconcileMonths int
}

// Defaults of Config.
const (
	DefaultInterval          = time.Second
	DefaultBatch             = 100
	DefaultFallbackLimit     = 10_000
	DefaultRebuildBatch      = 500
	DefaultReconcileInterval = 5 * time.Minute
	DefaultReconcileSample   = 100
	DefaultReconcileMonths   = 2
)

func (c Config) withDefaults() Config {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&c.Batch, DefaultBatch)
	set(&c.FallbackLimit, DefaultFallbackLimit)
	set(&c.RebuildBatch, DefaultRebuildBatch)
	set(&c.ReconcileSample, DefaultReconcileSample)
	set(&c.ReconcileMonths, DefaultReconcileMonths)
	c.ReconcileDeep = min(max(c.ReconcileDeep, 0), c.ReconcileSample)
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.ReconcileInterval <= 0 {
		c.ReconcileInterval = DefaultReconcileInterval
	}
	return c
}

// Deps are the ports the service uses.
type Deps struct {
	Queue   ports.RouteRepairQueue
	Store   ports.MessageStore // the topic's mirror segments
	Mirror  ports.RouteMirror  // tenant-wide listing and month-table audit
	Routes  ports.RouteCache
	Months  ports.MonthState
	Metrics ports.Metrics
	Log     *slog.Logger
}

// Service repairs routes. It implements ports.RouteRepairs.
type Service struct {
	cfg Config
	d   Deps

	mu sync.Mutex
	// fallback holds topics whose enqueue Redis refused, per tenant, so a Redis hiccup right
	// after COMMIT does not lose the repair; bounded by cfg.FallbackLimit in total.
	fallback  map[string]map[string]bool
	fallbacks int
	// cursors is where each tenant's reconciliation continues in each month's topics.
	cursors *topicsample.Cursors
}

var _ ports.RouteRepairs = (*Service)(nil)

// ErrFallbackFull: Redis refused a repair and the in-process fallback is full. The topic's
// route is then repaired only by a query that misses it or by the reconciliation.
var ErrFallbackFull = errors.New("route repair fallback full")

// New returns the service.
func New(cfg Config, d Deps) *Service {
	return &Service{
		cfg: cfg.withDefaults(), d: d,
		fallback: map[string]map[string]bool{}, cursors: topicsample.New(),
	}
}

// Enqueue schedules a rebuild of the topic's route. When Redis refuses, the topic is kept in
// process until the next pass.
func (s *Service) Enqueue(ctx context.Context, tenant, name string) error {
	if _, err := topic.Parse(name); err != nil {
		return fmt.Errorf("enqueue route repair: %w", err)
	}
	err := s.d.Queue.Add(ctx, tenant, name)
	if err == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	topics := s.fallback[tenant]
	if topics[name] {
		return nil
	}
	if s.fallbacks >= s.cfg.FallbackLimit {
		s.d.Log.ErrorContext(ctx, "route repair dropped: redis refused it and the fallback is full",
			"tenant", tenant, "topic", name, "err", err)
		return fmt.Errorf("enqueue route repair of %s: %w: %w", name, ErrFallbackFull, err)
	}
	if topics == nil {
		topics = map[string]bool{}
		s.fallback[tenant] = topics
	}
	topics[name] = true
	s.fallbacks++
	s.d.Log.WarnContext(ctx, "route repair kept in process: redis refused it", "tenant", tenant, "topic", name, "err", err)
	return nil
}

// Pending reports whether any route repair of the tenant waits. The queue keeps topics, not
// months, so a waiting repair counts for every month: the shard manager then holds a month in
// sealing until the queue drains (seed 000 §4.6).
func (s *Service) Pending(ctx context.Context, tenant string, _ month.Month) (bool, error) {
	if s.fallbackLen(tenant) > 0 {
		return true, nil
	}
	n, err := s.d.Queue.Len(ctx, tenant)
	if err != nil {
		return false, fmt.Errorf("route repair backlog of %s: %w", tenant, err)
	}
	return n > 0, nil
}

func (s *Service) fallbackLen(tenant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.fallback[tenant])
}

// Drain runs one pass: topics kept in process first, then up to Batch queued topics. It
// returns how many routes it repaired; a topic that failed stays queued for the next pass.
func (s *Service) Drain(ctx context.Context, tenant string) (int, error) {
	repaired := 0
	var errs error
	for _, name := range s.fallbackTopics(tenant) {
		if _, err := s.Rebuild(ctx, tenant, name); err != nil {
			errs = errors.Join(errs, err)
			continue
		}
		s.dropFallback(tenant, name)
		repaired++
	}
	tickets, err := s.d.Queue.Pending(ctx, tenant, s.cfg.Batch)
	if err != nil {
		errs = errors.Join(errs, fmt.Errorf("pending route repairs of %s: %w", tenant, err))
	}
	for _, t := range tickets {
		if _, err := topic.Parse(t.Topic); err != nil {
			// No rebuild can ever succeed; keeping it would hold sealing back forever.
			s.d.Log.ErrorContext(ctx, "dropping route repair of an invalid topic", "tenant", tenant, "topic", t.Topic)
			errs = errors.Join(errs, s.d.Queue.Done(ctx, tenant, t))
			continue
		}
		if _, err := s.Rebuild(ctx, tenant, t.Topic); err != nil {
			errs = errors.Join(errs, err)
			continue
		}
		if err := s.d.Queue.Done(ctx, tenant, t); err != nil {
			errs = errors.Join(errs, fmt.Errorf("finish route repair of %s: %w", t.Topic, err))
		}
		repaired++
	}
	s.d.Metrics.Add("group_message_route_repair_total", float64(repaired))
	s.reportBacklog(ctx, tenant)
	return repaired, errs
}

func (s *Service) fallbackTopics(tenant string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.fallback[tenant]))
	for name := range s.fallback[tenant] {
		out = append(out, name)
	}
	return out
}

func (s *Service) dropFallback(tenant, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fallback[tenant][name] {
		delete(s.fallback[tenant], name)
		s.fallbacks--
	}
}

// reportBacklog sets group_message_route_repair_backlog; while Redis cannot tell its part, the
// gauge keeps its last value rather than pretend the queue is empty.
func (s *Service) reportBacklog(ctx context.Context, tenant string) {
	n, err := s.d.Queue.Len(ctx, tenant)
	if err != nil {
		return
	}
	s.d.Metrics.Set("group_message_route_repair_backlog", float64(n+int64(s.fallbackLen(tenant))), tenant)
}

// Run works the repair queue of every tenant every Interval, first making sure each tenant's
// routes were built (EnsureRoutes), and reconciles every ReconcileInterval, until ctx ends.
func (s *Service) Run(ctx context.Context, tenants []string) {
	drain := time.NewTicker(s.cfg.Interval)
	defer drain.Stop()
	reconcile := time.NewTicker(s.cfg.ReconcileInterval)
	defer reconcile.Stop()
	for {
		for _, t := range tenants {
			s.pass(ctx, t)
		}
		select {
		case <-ctx.Done():
			return
		case <-drain.C:
		case <-reconcile.C:
			for _, t := range tenants {
				if _, err := s.Reconcile(ctx, t); err != nil && ctx.Err() == nil {
					s.d.Log.ErrorContext(ctx, "route reconciliation failed", "tenant", t, "err", err)
				}
			}
		}
	}
}

func (s *Service) pass(ctx context.Context, tenant string) {
	if err := s.EnsureRoutes(ctx, tenant); err != nil && ctx.Err() == nil {
		s.d.Log.ErrorContext(ctx, "tenant route rebuild failed", "tenant", tenant, "err", err)
	}
	if _, err := s.Drain(ctx, tenant); err != nil && ctx.Err() == nil {
		s.d.Log.WarnContext(ctx, "route repair pass failed", "tenant", tenant, "err", err)
	}
}
