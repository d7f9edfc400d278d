package contract

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// ReportsFactory returns a report store and an empty tenant.
type ReportsFactory func(t *testing.T) (s ports.Reports, tenant string)

// Reports runs the report store contract: one report per reporter and message, newest-first
// paging with a status filter, status changes.
func Reports(t *testing.T, newStore ReportsFactory) {
	s, tenant := newStore(t)
	ctx := context.Background()
	at := time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)
	add := func(id, reporter, seq int64) social.Report {
		t.Helper()
		r := social.Report{ID: id, Reporter: reporter, Topic: "grp_1", Seq: seq, Reason: "spam", Status: social.ReportOpen, CreatedAt: at, UpdatedAt: at}
		got, err := s.AddReport(ctx, tenant, r)
		if err != nil {
			t.Fatalf("AddReport %d: %v", id, err)
		}
		return got
	}
	first := add(10, 1, 5)
	if first.ID != 10 {
		t.Fatalf("AddReport returned %+v", first)
	}
	if again := add(11, 1, 5); again != first {
		t.Fatalf("a repeated report = %+v, want the first %+v", again, first)
	}
	add(12, 2, 5)
	add(13, 1, 6)

	ids := func(q social.ReportQuery) []int64 {
		t.Helper()
		rs, err := s.Reports(ctx, tenant, q)
		if err != nil {
			t.Fatalf("Reports(%+v): %v", q, err)
		}
		out := make([]int64, len(rs))
		for i, r := range rs {
			out[i] = r.ID
		}
		return out
	}
	if got := ids(social.ReportQuery{Limit: 10}); !slices.Equal(got, []int64{13, 12, 10}) {
		t.Fatalf("Reports = %v, want [13 12 10]", got)
	}
	if got := ids(social.ReportQuery{Before: 13, Limit: 1}); !slices.Equal(got, []int64{12}) {
		t.Fatalf("Reports before 13, limit 1 = %v, want [12]", got)
	}
	later := at.Add(time.Hour)
	for range 2 {
		if err := s.SetReportStatus(ctx, tenant, 12, social.ReportResolved, later); err != nil {
			t.Fatalf("SetReportStatus: %v", err)
		}
	}
	if got := ids(social.ReportQuery{Status: social.ReportOpen, Limit: 10}); !slices.Equal(got, []int64{13, 10}) {
		t.Fatalf("open reports = %v, want [13 10]", got)
	}
	resolved, err := s.Reports(ctx, tenant, social.ReportQuery{Status: social.ReportResolved, Limit: 10})
	if err != nil || len(resolved) != 1 || !resolved[0].UpdatedAt.Equal(later) || !resolved[0].CreatedAt.Equal(at) {
		t.Fatalf("resolved reports = %+v, %v", resolved, err)
	}
	if err := s.SetReportStatus(ctx, tenant, 99, social.ReportResolved, later); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("SetReportStatus of an unknown report: err = %v", err)
	}
}
