package adminapi

import (
	"context"
	"net/http"
)

// The legacy single-table migration (seed 000 §9): /admin/v1/tenants/{t}/migration/…
// Times are Unix milliseconds.

// MigrationMonthPlan is one month of created_at in the legacy table.
type MigrationMonthPlan struct {
	Month        string `json:"month"`
	Rows         int64  `json:"rows"`
	Topics       int64  `json:"topics"`
	MinCreatedAt int64  `json:"min_created_at"`
	MaxCreatedAt int64  `json:"max_created_at"`
	TableState   string `json:"table_state"`
}

// MigrationPlan is what a migration would do.
type MigrationPlan struct {
	Present     bool                 `json:"present"`
	Phase       string               `json:"phase"`
	Rows        int64                `json:"rows"`
	Topics      int64                `json:"topics"`
	CursorIndex bool                 `json:"cursor_index"`
	MaxMsgID    int64                `json:"max_msg_id"`
	Warnings    []string             `json:"warnings"`
	Months      []MigrationMonthPlan `json:"months"`
}

// MigrationMismatch is a seq range of one topic and month that differs.
type MigrationMismatch struct {
	Topic   string `json:"topic"`
	Month   string `json:"month"`
	Kind    string `json:"kind"`
	FromSeq int64  `json:"from_seq"`
	ToSeq   int64  `json:"to_seq"`
	Rows    int64  `json:"rows"`
}

// MigrationReport is the last verification.
type MigrationReport struct {
	Months      []string            `json:"months"`
	TopicMonths int64               `json:"topic_months"`
	Rows        int64               `json:"rows"`
	Modified    int64               `json:"modified"`
	Mismatches  []MigrationMismatch `json:"mismatches"`
	Unlisted    int64               `json:"unlisted"`
	At          int64               `json:"at"`
}

// MigrationCursor is where the copy stands in the legacy table.
type MigrationCursor struct {
	CreatedAt int64 `json:"created_at"`
	MessageID int64 `json:"message_id"`
}

// MigrationJob is a tenant's migration.
type MigrationJob struct {
	Phase     string           `json:"phase"`
	CutoverAt int64            `json:"cutover_at"`
	Prepared  bool             `json:"prepared"`
	Cursor    MigrationCursor  `json:"cursor"`
	CopyDone  bool             `json:"copy_done"`
	Run       int              `json:"run"`
	Rows      int64            `json:"rows"`
	Topics    int64            `json:"topics"`
	Copied    int64            `json:"copied"`
	Skipped   int64            `json:"skipped"`
	Failed    int64            `json:"failed"`
	Remaining int64            `json:"remaining"`
	Batches   int64            `json:"batches"`
	Error     string           `json:"error,omitempty"`
	Report    *MigrationReport `json:"report,omitempty"`
	UpdatedAt int64            `json:"updated_at"`
}

// Running reports whether the job has background work left (copying or verifying).
func (j MigrationJob) Running() bool { return j.Phase == "copying" || j.Phase == "verifying" }

// MigrationMonth is one month's progress in the current run.
type MigrationMonth struct {
	Month      string `json:"month"`
	Rows       int64  `json:"rows"`
	Topics     int64  `json:"topics"`
	Copied     int64  `json:"copied"`
	Skipped    int64  `json:"skipped"`
	Failed     int64  `json:"failed"`
	Done       int64  `json:"done"`
	Verified   string `json:"verified"`
	VerifiedAt int64  `json:"verified_at"`
}

// MigrationStatus is the job, its months and its speed.
type MigrationStatus struct {
	Job           MigrationJob     `json:"job"`
	Months        []MigrationMonth `json:"months"`
	RowsPerSecond float64          `json:"rows_per_second"`
	ETASeconds    float64          `json:"eta_seconds"`
	// Verifying is set while the node that answered compares a month.
	Verifying *MigrationVerifying `json:"verifying,omitempty"`
}

// MigrationVerifying is the month being compared and its legacy rows compared so far.
type MigrationVerifying struct {
	Month string `json:"month"`
	Rows  int64  `json:"rows"`
}

// MigrationPlan reads the legacy table by month (a full scan; it writes nothing).
func (c *Client) MigrationPlan(ctx context.Context) (MigrationPlan, error) {
	var out MigrationPlan
	err := c.do(ctx, http.MethodGet, "/migration/plan", nil, &out)
	return out, err
}

// MigrationStatus reads the job.
func (c *Client) MigrationStatus(ctx context.Context) (MigrationStatus, error) {
	var out MigrationStatus
	err := c.do(ctx, http.MethodGet, "/migration/status", nil, &out)
	return out, err
}

type migrationStartRequest struct {
	Rerun bool `json:"rerun,omitempty"`
}

// MigrationStart records the cutover (the first time) and starts the copy; rerun copies a
// stopped or verified job again from the first row.
func (c *Client) MigrationStart(ctx context.Context, rerun bool) (MigrationJob, error) {
	var out MigrationJob
	err := c.do(ctx, http.MethodPost, "/migration/start", migrationStartRequest{rerun}, &out)
	return out, err
}

// MigrationCommand sends pause, resume, verify or finish.
func (c *Client) MigrationCommand(ctx context.Context, command string) (MigrationJob, error) {
	var out MigrationJob
	err := c.do(ctx, http.MethodPost, "/migration/"+command, nil, &out)
	return out, err
}
