package social

import "time"

// ReportStatus is where a user report stands in moderation.
type ReportStatus string

const (
	ReportOpen      ReportStatus = "open"
	ReportResolved  ReportStatus = "resolved"
	ReportDismissed ReportStatus = "dismissed"
)

// Valid reports whether s is a known status.
func (s ReportStatus) Valid() bool {
	return s == ReportOpen || s == ReportResolved || s == ReportDismissed
}

// Report is a user's complaint about one message, named by topic and seq so the evidence is
// found again across month tables (seed 000 §6.4).
type Report struct {
	ID        int64
	Reporter  int64
	Topic     string
	Seq       int64
	Reason    string
	Status    ReportStatus
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MaxReportReason bounds the reason text (column width).
const MaxReportReason = 512

// ReportQuery pages reports newest first.
type ReportQuery struct {
	// Status filters by status; empty lists all.
	Status ReportStatus
	// Before is the id to continue below; 0 starts at the newest.
	Before int64
	Limit  int
}
