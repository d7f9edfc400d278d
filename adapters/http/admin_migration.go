package http

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/loop/migration"
)

// migrationRoutes are the legacy single-table migration of seed 000 §9 (imctl migrate). Every
// command answers at once with the job; the work runs in the background and GET
// /migration/status follows it.
func (s *Server) migrationRoutes(t *echo.Group) {
	t.GET("/migration/plan", s.migrationPlan)
	t.GET("/migration/status", s.migrationStatus)
	t.POST("/migration/start", s.startMigration)
	t.POST("/migration/pause", s.migrationCommand((*migration.Service).Pause))
	t.POST("/migration/resume", s.migrationCommand((*migration.Service).Resume))
	t.POST("/migration/verify", s.migrationCommand((*migration.Service).Verify))
	t.POST("/migration/finish", s.migrationCommand((*migration.Service).Finish))
}

// migrationService is the service, or 50301 when this node runs none.
func (s *Server) migrationService() (*migration.Service, error) {
	if s.d.Migration == nil {
		return nil, apperr.New(apperr.Busy, "migration unavailable")
	}
	return s.d.Migration, nil
}

type migrationMonthPlanJSON struct {
	Month        string `json:"month"`
	Rows         int64  `json:"rows"`
	Topics       int64  `json:"topics"`
	MinCreatedAt int64  `json:"min_created_at"` // Unix ms
	MaxCreatedAt int64  `json:"max_created_at"`
	TableState   string `json:"table_state"` // "" when the month has no table yet
}

type migrationPlanJSON struct {
	Present     bool                     `json:"present"`
	Phase       string                   `json:"phase"`
	Rows        int64                    `json:"rows"`
	Topics      int64                    `json:"topics"`
	CursorIndex bool                     `json:"cursor_index"`
	MaxMsgID    int64                    `json:"max_msg_id"`
	Warnings    []string                 `json:"warnings"`
	Months      []migrationMonthPlanJSON `json:"months"`
}

// migrationPlan reads the legacy table by month; it writes nothing, but scans the whole table.
func (s *Server) migrationPlan(c echo.Context) error {
	svc, err := s.migrationService()
	if err != nil {
		return err
	}
	p, err := svc.Plan(c.Request().Context(), c.Param("tenant"))
	if err != nil {
		return err
	}
	out := migrationPlanJSON{Present: p.Present, Phase: string(p.Phase), Rows: p.Rows, Topics: p.Topics,
		CursorIndex: p.CursorIndex, MaxMsgID: p.MaxMsgID, Warnings: append([]string{}, p.Warnings...),
		Months: make([]migrationMonthPlanJSON, len(p.Months))}
	for i, m := range p.Months {
		out.Months[i] = migrationMonthPlanJSON{Month: m.Month.String(), Rows: m.Rows, Topics: m.Topics,
			MinCreatedAt: unixMilli(m.MinCreatedAt), MaxCreatedAt: unixMilli(m.MaxCreatedAt), TableState: m.TableState}
	}
	return c.JSON(http.StatusOK, out)
}

type migrationCursorJSON struct {
	CreatedAt int64 `json:"created_at"` // Unix ms
	MessageID int64 `json:"message_id"`
}

type migrationMismatchJSON struct {
	Topic   string `json:"topic"`
	Month   string `json:"month"`
	Kind    string `json:"kind"` // missing | extra | differs | legacy_changed
	FromSeq int64  `json:"from_seq"`
	ToSeq   int64  `json:"to_seq"`
	Rows    int64  `json:"rows"`
}

type migrationReportJSON struct {
	Months      []string                `json:"months"`
	TopicMonths int64                   `json:"topic_months"`
	Rows        int64                   `json:"rows"`
	Modified    int64                   `json:"modified"`
	Mismatches  []migrationMismatchJSON `json:"mismatches"`
	Unlisted    int64                   `json:"unlisted"`
	At          int64                   `json:"at"`
}

type migrationJobJSON struct {
	Phase     string               `json:"phase"`
	CutoverAt int64                `json:"cutover_at"`
	Prepared  bool                 `json:"prepared"`
	Cursor    migrationCursorJSON  `json:"cursor"`
	CopyDone  bool                 `json:"copy_done"`
	Run       int                  `json:"run"`
	Rows      int64                `json:"rows"`
	Topics    int64                `json:"topics"`
	Copied    int64                `json:"copied"`
	Skipped   int64                `json:"skipped"`
	Failed    int64                `json:"failed"`
	Remaining int64                `json:"remaining"`
	Batches   int64                `json:"batches"`
	Error     string               `json:"error,omitempty"`
	Report    *migrationReportJSON `json:"report,omitempty"`
	UpdatedAt int64                `json:"updated_at"`
}

func newMigrationJob(j legacy.Job) migrationJobJSON {
	out := migrationJobJSON{
		Phase: string(j.Phase), CutoverAt: unixMilli(j.CutoverAt), Prepared: j.Prepared,
		Cursor:   migrationCursorJSON{CreatedAt: unixMilli(j.Cursor.CreatedAt), MessageID: j.Cursor.MsgID},
		CopyDone: j.CopyDone, Run: j.Run, Rows: j.Rows, Topics: j.Topics, Copied: j.Copied, Skipped: j.Skipped,
		Failed: j.Failed, Remaining: j.Remaining(), Batches: j.Batches, Error: j.Error, UpdatedAt: unixMilli(j.UpdatedAt),
	}
	if r := j.Report; r != nil {
		rep := &migrationReportJSON{TopicMonths: r.TopicMonths, Rows: r.Rows, Modified: r.Modified, Unlisted: r.Unlisted,
			At: unixMilli(r.At), Months: make([]string, len(r.Months)), Mismatches: make([]migrationMismatchJSON, len(r.Mismatches))}
		for i, m := range r.Months {
			rep.Months[i] = m.String()
		}
		for i, m := range r.Mismatches {
			rep.Mismatches[i] = migrationMismatchJSON{Topic: m.Topic, Month: m.Month.String(), Kind: string(m.Kind),
				FromSeq: m.FromSeq, ToSeq: m.ToSeq, Rows: m.Rows}
		}
		out.Report = rep
	}
	return out
}

type migrationMonthJSON struct {
	Month      string `json:"month"`
	Rows       int64  `json:"rows"`
	Topics     int64  `json:"topics"`
	Copied     int64  `json:"copied"`
	Skipped    int64  `json:"skipped"`
	Failed     int64  `json:"failed"`
	Done       int64  `json:"done"`
	Verified   string `json:"verified"` // "" | ok | mismatch
	VerifiedAt int64  `json:"verified_at"`
}

type migrationStatusJSON struct {
	Job           migrationJobJSON     `json:"job"`
	Months        []migrationMonthJSON `json:"months"`
	RowsPerSecond float64              `json:"rows_per_second"`
	ETASeconds    float64              `json:"eta_seconds"`
	// Verifying is present while the answering node compares a month.
	Verifying *migrationVerifyingJSON `json:"verifying,omitempty"`
}

type migrationVerifyingJSON struct {
	Month string `json:"month"`
	Rows  int64  `json:"rows"`
}

// migrationStatus reads the job, its months and its speed.
func (s *Server) migrationStatus(c echo.Context) error {
	svc, err := s.migrationService()
	if err != nil {
		return err
	}
	p, err := svc.Status(c.Request().Context(), c.Param("tenant"))
	if err != nil {
		return err
	}
	out := migrationStatusJSON{Job: newMigrationJob(p.Job), RowsPerSecond: p.RowsPerSecond, ETASeconds: p.ETA().Seconds(),
		Months: make([]migrationMonthJSON, len(p.Months))}
	for i, m := range p.Months {
		out.Months[i] = migrationMonthJSON{Month: m.Month.String(), Rows: m.Rows, Topics: m.Topics, Copied: m.Copied,
			Skipped: m.Skipped, Failed: m.Failed, Done: m.Done(), Verified: string(m.Verified), VerifiedAt: unixMilli(m.VerifiedAt)}
	}
	if v := p.Verifying; v != nil {
		out.Verifying = &migrationVerifyingJSON{Month: v.Month.String(), Rows: v.Rows}
	}
	return c.JSON(http.StatusOK, out)
}

type migrationStartRequest struct {
	Rerun bool `json:"rerun,omitempty"`
}

// startMigration records the cutover (first start) and starts the copy; {"rerun": true}
// copies a stopped or verified job again from the first row.
func (s *Server) startMigration(c echo.Context) error {
	svc, err := s.migrationService()
	if err != nil {
		return err
	}
	var body migrationStartRequest
	if c.Request().ContentLength != 0 {
		if err := decodeJSON(c, &body); err != nil {
			return err
		}
	}
	job, err := svc.Start(c.Request().Context(), c.Param("tenant"), body.Rerun)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newMigrationJob(job))
}

// migrationCommand serves a command that changes the job's phase.
func (s *Server) migrationCommand(cmd func(*migration.Service, context.Context, string) (legacy.Job, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		svc, err := s.migrationService()
		if err != nil {
			return err
		}
		job, err := cmd(svc, c.Request().Context(), c.Param("tenant"))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, newMigrationJob(job))
	}
}
