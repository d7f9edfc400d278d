package mysql

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// Reports implements ports.Reports over t_reports.
type Reports struct{ cluster *Cluster }

var _ ports.Reports = (*Reports)(nil)

// NewReports returns the report store of the provisioned tenants of c.
func NewReports(c *Cluster) *Reports { return &Reports{cluster: c} }

// AddReport inserts the report; the unique (reporter, topic, seq) key turns a repeated report
// into the first one.
func (s *Reports) AddReport(ctx context.Context, tenant string, r social.Report) (social.Report, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return social.Report{}, err
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC().Truncate(time.Millisecond), r.UpdatedAt.UTC().Truncate(time.Millisecond)
	// The report and its report.filed event commit together; a repeated report writes neither.
	err = inTx(ctx, t.db, func(q *sqlcdb.Queries) error {
		if err := q.InsertReport(ctx, sqlcdb.InsertReportParams{
			ID: r.ID, Reporter: r.Reporter, Topic: r.Topic, Seqid: r.Seq, Reason: r.Reason, Status: string(r.Status),
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		}); err != nil {
			return err
		}
		return recordEvent(ctx, q, webhook.ReportRecord(r))
	})
	if isDuplicate(err, "uk_reporter_message") {
		row, err := t.q.ReportByMessage(ctx, sqlcdb.ReportByMessageParams{Reporter: r.Reporter, Topic: r.Topic, Seqid: r.Seq})
		if err != nil {
			return social.Report{}, fmt.Errorf("read repeated report of %s seq %d: %w", r.Topic, r.Seq, err)
		}
		return reportOf(row), nil
	}
	if err != nil {
		return social.Report{}, fmt.Errorf("add report of %s seq %d: %w", r.Topic, r.Seq, err)
	}
	return r, nil
}

// Reports pages reports newest first.
func (s *Reports) Reports(ctx context.Context, tenant string, q social.ReportQuery) ([]social.Report, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	lim, err := limit32(q.Limit)
	if err != nil {
		return nil, err
	}
	before := q.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	var rows []sqlcdb.TReport
	if q.Status == "" {
		rows, err = t.q.ReportsPage(ctx, sqlcdb.ReportsPageParams{Before: before, Limit: lim})
	} else {
		rows, err = t.q.ReportsOfStatusPage(ctx, sqlcdb.ReportsOfStatusPageParams{Status: string(q.Status), Before: before, Limit: lim})
	}
	if err != nil {
		return nil, fmt.Errorf("list reports: %w", err)
	}
	out := make([]social.Report, len(rows))
	for i, r := range rows {
		out[i] = reportOf(r)
	}
	return out, nil
}

// SetReportStatus moves a report to status.
func (s *Reports) SetReportStatus(ctx context.Context, tenant string, id int64, status social.ReportStatus, at time.Time) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	n, err := t.q.SetReportStatus(ctx, sqlcdb.SetReportStatusParams{Status: string(status), UpdatedAt: at.UTC(), ID: id})
	if err != nil {
		return fmt.Errorf("set status of report %d: %w", id, err)
	}
	if n > 0 {
		return nil
	}
	found, err := t.q.ReportExists(ctx, id)
	switch {
	case err != nil:
		return fmt.Errorf("report %d exists: %w", id, err)
	case !found:
		return fmt.Errorf("report %d: %w", id, social.ErrNotFound)
	}
	return nil
}

func reportOf(r sqlcdb.TReport) social.Report {
	return social.Report{
		ID: r.ID, Reporter: r.Reporter, Topic: r.Topic, Seq: r.Seqid, Reason: r.Reason,
		Status: social.ReportStatus(r.Status), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}
