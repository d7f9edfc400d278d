package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// Reports is the in-memory report store.
type Reports struct {
	mu      sync.Mutex
	tenants map[string]map[int64]social.Report
	events  *WebhookEvents // nil: no webhook events recorded
}

var _ ports.Reports = (*Reports)(nil)

// NewReports returns an empty report store.
func NewReports() *Reports { return &Reports{tenants: make(map[string]map[int64]social.Report)} }

// RecordEventsIn makes s record a report.filed event in e for each new report, as the MySQL
// store writes it with the report (ports.WebhookEvents), and returns s.
func (s *Reports) RecordEventsIn(e *WebhookEvents) *Reports {
	s.events = e
	return s
}

// AddReport stores r unless its reporter reported the message before.
func (s *Reports) AddReport(_ context.Context, tenant string, r social.Report) (social.Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.tenants[tenant]
	if all == nil {
		all = make(map[int64]social.Report)
		s.tenants[tenant] = all
	}
	for _, known := range all {
		if known.Reporter == r.Reporter && known.Topic == r.Topic && known.Seq == r.Seq {
			return known, nil
		}
	}
	if _, taken := all[r.ID]; taken {
		return social.Report{}, apperr.New(apperr.Conflict, fmt.Sprintf("report id %d is taken", r.ID))
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC().Truncate(time.Millisecond), r.UpdatedAt.UTC().Truncate(time.Millisecond)
	s.events.record(tenant, webhook.ReportRecord(r))
	all[r.ID] = r
	return r, nil
}

// Reports pages reports newest first.
func (s *Reports) Reports(_ context.Context, tenant string, q social.ReportQuery) ([]social.Report, error) {
	if err := checkLimit(q.Limit); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []social.Report
	for _, r := range s.tenants[tenant] {
		if (q.Before <= 0 || r.ID < q.Before) && (q.Status == "" || r.Status == q.Status) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b social.Report) int { return cmp.Compare(b.ID, a.ID) })
	return out[:min(len(out), q.Limit)], nil
}

// SetReportStatus moves a report to status.
func (s *Reports) SetReportStatus(_ context.Context, tenant string, id int64, status social.ReportStatus, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.tenants[tenant][id]
	if !ok {
		return fmt.Errorf("report %d: %w", id, social.ErrNotFound)
	}
	r.Status, r.UpdatedAt = status, at.UTC().Truncate(time.Millisecond)
	s.tenants[tenant][id] = r
	return nil
}
