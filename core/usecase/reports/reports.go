// Package reports lets users report a message and operators review the reports with their
// evidence: the message itself, fetched by topic+seq through history (seed 000 §6.4), so the
// evidence is found whatever month holds it.
package reports

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

// MaxPage bounds a page of reports.
const MaxPage = 100

// Deps are the ports and services reports use.
type Deps struct {
	Store   ports.Reports
	History *history.Service
	IDs     ports.IDGenerator
	Clock   ports.Clock
}

// Service files and reviews reports.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service { return &Service{d: d} }

// File reports message topic+seq. The reporter must be able to read it: a user cannot report,
// and so learn about, a message of a conversation they are not in. Reporting the same message
// again returns the first report.
func (s *Service) File(ctx context.Context, tenant string, reporter int64, topicName string, seq int64, reason string) (social.Report, error) {
	if utf8.RuneCountInString(reason) > social.MaxReportReason || !utf8.ValidString(reason) {
		return social.Report{}, apperr.New(apperr.InvalidArgument, fmt.Sprintf("reason must be valid UTF-8 of at most %d characters", social.MaxReportReason))
	}
	if _, err := s.d.History.Get(ctx, tenant, reporter, topicName, seq); err != nil {
		return social.Report{}, err
	}
	id, err := s.d.IDs.NextID()
	if err != nil {
		return social.Report{}, apperr.Wrap(apperr.Busy, "id generation failed", err)
	}
	now := s.d.Clock.Now().UTC()
	r := social.Report{ID: id, Reporter: reporter, Topic: topicName, Seq: seq, Reason: reason, Status: social.ReportOpen, CreatedAt: now, UpdatedAt: now}
	stored, err := s.d.Store.AddReport(ctx, tenant, r)
	if err != nil {
		return social.Report{}, apperr.Wrap(apperr.Busy, "report store unavailable", err)
	}
	return stored, nil
}

// Reviewed is a report with its evidence; Evidence is nil when the message is gone (a
// tombstone is still evidence: its status says so).
type Reviewed struct {
	social.Report
	Evidence *message.Message
}

// List pages reports newest first, each with its message read as an operator (no membership
// check, no per-user deletions).
func (s *Service) List(ctx context.Context, tenant string, q social.ReportQuery) ([]Reviewed, error) {
	switch {
	case q.Limit == 0:
		q.Limit = 50
	case q.Limit < 0 || q.Limit > MaxPage:
		return nil, apperr.New(apperr.InvalidArgument, fmt.Sprintf("limit must be 1-%d", MaxPage))
	}
	if q.Status != "" && !q.Status.Valid() {
		return nil, apperr.New(apperr.InvalidArgument, "status must be open, resolved or dismissed")
	}
	rs, err := s.d.Store.Reports(ctx, tenant, q)
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "report store unavailable", err)
	}
	out := make([]Reviewed, len(rs))
	for i, r := range rs {
		out[i].Report = r
		m, err := s.d.History.Get(ctx, tenant, 0, r.Topic, r.Seq)
		switch {
		case err == nil:
			out[i].Evidence = &m
		case apperr.CodeOf(err) != apperr.NotFound:
			return nil, err
		}
	}
	return out, nil
}

// SetStatus resolves or dismisses a report, or opens it again.
func (s *Service) SetStatus(ctx context.Context, tenant string, id int64, status social.ReportStatus) error {
	if !status.Valid() {
		return apperr.New(apperr.InvalidArgument, "status must be open, resolved or dismissed")
	}
	err := s.d.Store.SetReportStatus(ctx, tenant, id, status, s.d.Clock.Now())
	if errors.Is(err, social.ErrNotFound) {
		return apperr.New(apperr.NotFound, "report not found")
	}
	if err != nil {
		return apperr.Wrap(apperr.Busy, "report store unavailable", err)
	}
	return nil
}
