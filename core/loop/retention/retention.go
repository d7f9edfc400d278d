// Package retention applies each tenant's retention policy to its months (seed 000 §10): keep
// the newest months online, archive older sealed months and drop their tables, and optionally
// purge months past a second age for good, routes and mirror rows included (seed 000 §3.3
// rule 5). Ages count from the tenant's active month, the month new messages go to.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/kit/jobs"
	"github.com/imdhq/imd/core/kit/periodic"
	"github.com/imdhq/imd/core/usecase/archiver"
	"github.com/imdhq/imd/ports"
)

// Policy is one tenant's retention. Zero values switch a step off.
type Policy struct {
	// KeepOnlineMonths is how many months, the active one included, keep their MySQL table;
	// older sealed months are archived and their tables dropped.
	KeepOnlineMonths int `json:"keep_online_months"`
	// PurgeAfterMonths is the age from which a month is purged (archive files, table, routes,
	// mirror rows and index entries all go); it must exceed KeepOnlineMonths.
	PurgeAfterMonths int `json:"purge_after_months"`
}

// Validate rejects policies that would purge months kept online.
func (p Policy) Validate() error {
	switch {
	case p.KeepOnlineMonths < 0 || p.PurgeAfterMonths < 0:
		return errors.New("retention months must not be negative")
	case p.PurgeAfterMonths > 0 && p.KeepOnlineMonths > 0 && p.PurgeAfterMonths <= p.KeepOnlineMonths:
		return errors.New("purge_after_months must exceed keep_online_months")
	case p.PurgeAfterMonths > 0 && p.PurgeAfterMonths < 2:
		return errors.New("purge_after_months must be at least 2: the active month is never purged")
	case p.KeepOnlineMonths == 1:
		return errors.New("keep_online_months must be 0 (off) or at least 2: last month is still sealing")
	}
	return nil
}

// Action is one step of a plan.
type Action string

const (
	Archive Action = "archive" // archive, then drop the table
	Drop    Action = "drop"    // archived already: drop the table
	Purge   Action = "purge"   // archive first if needed, then purge
)

// Step is what the policy asks for one month.
type Step struct {
	Month  string      `json:"month"`
	State  shard.State `json:"state"`
	Age    int         `json:"age"` // months before the active one
	Action Action      `json:"action"`
	// Outcome is set by Run: done, or why the step did not happen.
	Outcome string `json:"outcome,omitempty"`
}

// Plan is the policy applied to a tenant's catalog at one moment.
type Plan struct {
	Tenant string `json:"tenant"`
	Policy Policy `json:"policy"`
	Active string `json:"active_month"`
	Steps  []Step `json:"steps"`
}

// Deps are what retention reads and runs.
type Deps struct {
	Archiver *archiver.Service
	Catalog  ports.ShardStore
	Rows     ports.MonthRows
	Months   ports.MonthState
	Log      *slog.Logger
}

// Service plans and runs retention.
type Service struct {
	policies map[string]Policy
	fallback Policy
	d        Deps
}

// Config is the retention policy of every tenant: Tenants override Fallback per tenant.
type Config struct {
	Fallback Policy
	Tenants  map[string]Policy
}

// New returns the service.
func New(cfg Config, d Deps) (*Service, error) {
	if err := cfg.Fallback.Validate(); err != nil {
		return nil, fmt.Errorf("default retention: %w", err)
	}
	for t, p := range cfg.Tenants {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("retention of %s: %w", t, err)
		}
	}
	return &Service{policies: cfg.Tenants, fallback: cfg.Fallback, d: d}, nil
}

// PolicyOf returns the tenant's policy.
func (s *Service) PolicyOf(tenant string) Policy {
	if p, ok := s.policies[tenant]; ok {
		return p
	}
	return s.fallback
}

// Plan lists what the tenant's policy asks for now, oldest month first.
func (s *Service) Plan(ctx context.Context, tenant string) (Plan, error) {
	p := s.PolicyOf(tenant)
	active, found, err := s.d.Months.Active(ctx, tenant)
	if err != nil {
		return Plan{}, apperr.Wrap(apperr.Busy, "month state unavailable", err)
	}
	if !found {
		return Plan{}, apperr.New(apperr.Conflict, "the tenant has no active month yet")
	}
	infos, err := s.d.Catalog.Catalog(ctx, tenant)
	if err != nil {
		return Plan{}, apperr.Wrap(apperr.Busy, "catalog unavailable", err)
	}
	plan := Plan{Tenant: tenant, Policy: p, Active: active.String(), Steps: []Step{}}
	for _, in := range infos {
		// The shard manager keeps these tables; they are planned once they leave its window.
		kept, err := s.d.Archiver.ManagerKeeps(ctx, in.Month)
		if err != nil {
			return Plan{}, err
		}
		if kept {
			continue
		}
		age := monthsBetween(in.Month, active)
		step := Step{Month: in.Month.String(), State: in.State, Age: age}
		switch {
		case p.PurgeAfterMonths > 0 && age >= p.PurgeAfterMonths && (in.State == shard.Sealed || in.State == shard.Archived):
			step.Action = Purge
		case p.KeepOnlineMonths > 0 && age >= p.KeepOnlineMonths && in.State == shard.Sealed:
			step.Action = Archive
		case p.KeepOnlineMonths > 0 && age >= p.KeepOnlineMonths && in.State == shard.Archived:
			exists, err := s.d.Rows.TableExists(ctx, tenant, in.Month)
			if err != nil {
				return Plan{}, apperr.Wrap(apperr.Busy, "month table unavailable", err)
			}
			if !exists {
				continue
			}
			step.Action = Drop
		default:
			continue
		}
		plan.Steps = append(plan.Steps, step)
	}
	return plan, nil
}

// monthsBetween is how many months m lies before active.
func monthsBetween(m, active month.Month) int {
	return (active.Year()*12 + int(active.Mon())) - (m.Year()*12 + int(m.Mon()))
}

// Run carries the plan out month by month. A month that fails its checks or its operation is
// reported and skipped; the others go on.
func (s *Service) Run(ctx context.Context, tenant string, report jobs.Reporter) (Plan, error) {
	plan, err := s.Plan(ctx, tenant)
	if err != nil {
		return Plan{}, err
	}
	for i := range plan.Steps {
		st := &plan.Steps[i]
		m, err := month.Parse(st.Month)
		if err != nil {
			return plan, apperr.Wrap(apperr.Internal, "catalog month", err)
		}
		err = s.apply(ctx, tenant, m, *st, report)
		st.Outcome = "done"
		if err != nil {
			st.Outcome = apperr.MessageOf(err)
			s.d.Log.WarnContext(ctx, "retention step skipped", "tenant", tenant, "month", st.Month, "action", st.Action, "err", err)
		}
		if ctx.Err() != nil {
			return plan, ctx.Err()
		}
	}
	return plan, nil
}

func (s *Service) apply(ctx context.Context, tenant string, m month.Month, st Step, report jobs.Reporter) error {
	if st.State == shard.Sealed {
		if _, err := s.d.Archiver.Archive(ctx, tenant, m, report); err != nil {
			return err
		}
	}
	if st.Action == Purge {
		return s.d.Archiver.Purge(ctx, tenant, m, report)
	}
	return s.d.Archiver.Drop(ctx, tenant, m, report)
}

// RunEvery applies the policies of tenants every interval until ctx ends.
func (s *Service) RunEvery(ctx context.Context, tenants func() []string, interval time.Duration) {
	periodic.EveryTenant(ctx, interval, tenants, func(ctx context.Context, tenant string) {
		if p := s.PolicyOf(tenant); p.KeepOnlineMonths == 0 && p.PurgeAfterMonths == 0 {
			return
		}
		if _, err := s.Run(ctx, tenant, nil); err != nil && ctx.Err() == nil {
			s.d.Log.WarnContext(ctx, "retention pass failed", "tenant", tenant, "err", err)
		}
	})
}
