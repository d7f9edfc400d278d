package http

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/kit/jobs"
	"github.com/imdhq/imd/core/loop/retention"
	"github.com/imdhq/imd/core/usecase/archiver"
	"github.com/imdhq/imd/core/usecase/longsearch"
	"github.com/imdhq/imd/core/usecase/reindex"
)

// ArchiveOps serve the archive, retention, reindex and long-term search routes of this file
// (seed 000 §6.6, §10). Nil services answer 50301; without an Archiver the archive route of
// admin_shards.go keeps marking months archived as a state only.
type ArchiveOps struct {
	Archiver  *archiver.Service
	Retention *retention.Service
	Reindex   *reindex.Service
	Jobs      *jobs.Jobs
	Search    *longsearch.Searcher
}

// Job waits: an operation answers once done, or after the wait with 202 and its job, which
// GET /jobs/{job_id} then follows.
const (
	defaultJobWait = 30 * time.Second
	maxJobWait     = 50 * time.Second // under the listener's write timeout
)

func (s *Server) archiveRoutes(t *echo.Group) {
	t.GET("/shards/:month/archive", s.archiveManifest)
	t.POST("/shards/:month/archive/check", s.monthJob("check"))
	t.POST("/shards/:month/drop", s.monthJob("drop"))
	t.POST("/shards/:month/restore", s.monthJob("restore"))
	t.POST("/shards/:month/purge", s.monthJob("purge"))
	t.GET("/jobs/:job_id", s.getJob)
	t.GET("/retention", s.retentionPlan)
	t.POST("/retention/run", s.runRetention)
	t.POST("/search/reindex", s.runReindex)
	t.GET("/search/messages", s.adminLongSearch)
}

// jobJSON is an operation's state. Result is the operation's answer once done; Error its
// failure.
type jobJSON struct {
	JobID      string        `json:"job_id"`
	Op         string        `json:"op"`
	Target     string        `json:"target,omitempty"`
	State      string        `json:"state"` // running | done | failed
	Progress   jobs.Progress `json:"progress"`
	StartedAt  int64         `json:"started_at"`            // Unix ms
	FinishedAt int64         `json:"finished_at,omitempty"` // Unix ms
	Error      *errorBody    `json:"error,omitempty"`
	Result     any           `json:"result,omitempty"`
}

func newJobJSON(j jobs.Job) jobJSON {
	out := jobJSON{
		JobID: j.ID, Op: j.Op, Target: j.Target, State: "running", Progress: j.Progress,
		StartedAt: unixMilli(j.StartedAt), FinishedAt: unixMilli(j.FinishedAt), Result: j.Result,
	}
	switch {
	case j.Running():
	case j.Err != nil:
		out.State = "failed"
		out.Error = &errorBody{Code: apperr.CodeOf(j.Err), Msg: apperr.MessageOf(j.Err)}
	default:
		out.State = "done"
	}
	return out
}

func (s *Server) archiveOps() (ArchiveOps, error) {
	a := s.d.Archive
	if a.Archiver == nil || a.Jobs == nil {
		return a, apperr.New(apperr.Busy, "archiving is not available")
	}
	return a, nil
}

// startJob starts (or joins) an operation and waits for it up to ?wait= (a duration, default
// 30s, at most 50s).
func (s *Server) startJob(c echo.Context, op, target string, work jobs.Work) (jobs.Job, error) {
	wait := defaultJobWait
	if raw := c.QueryParam("wait"); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < 0 || d > maxJobWait {
			return jobs.Job{}, apperr.New(apperr.InvalidArgument, "wait must be a duration of 0-50s")
		}
		wait = d
	}
	j := s.d.Archive.Jobs.Start(c.Param("tenant"), op, target, work)
	return s.d.Archive.Jobs.Wait(c.Request().Context(), j.ID, wait)
}

// answerJob writes a finished job's answer, a failed job's error, or 202 with a running job.
func answerJob(c echo.Context, j jobs.Job) error {
	switch {
	case j.Running():
		return c.JSON(http.StatusAccepted, newJobJSON(j))
	case j.Err != nil:
		return j.Err
	}
	return c.JSON(http.StatusOK, newJobJSON(j))
}

func pathMonth(c echo.Context) (month.Month, error) {
	m, err := month.Parse(c.Param("month"))
	if err != nil {
		return 0, apperr.New(apperr.InvalidArgument, "month must be YYYYMM")
	}
	return m, nil
}

// archivedMonthJSON answers the archive of a month; the state-only archive runs no job.
type archivedMonthJSON struct {
	ShardMonth string `json:"shard_month"`
	Status     string `json:"status"` // archived | running
	JobID      string `json:"job_id,omitempty"`
}

// archiveMonthJob runs the full archive of a month (export, read-back, manifest, state) for
// admin_shards.go's route, answering like the state-only archive did.
func (s *Server) archiveMonthJob(c echo.Context, m month.Month) error {
	tenant := c.Param("tenant")
	a := s.d.Archive
	j, err := s.startJob(c, "archive", m.String(), func(ctx context.Context, rep jobs.Reporter) (any, error) {
		man, err := a.Archiver.Archive(ctx, tenant, m, rep)
		if err != nil {
			return nil, err
		}
		return manifestSummary(man), nil
	})
	if err != nil {
		return err
	}
	switch {
	case j.Running():
		return c.JSON(http.StatusAccepted, archivedMonthJSON{ShardMonth: m.String(), Status: "running", JobID: j.ID})
	case j.Err != nil:
		return j.Err
	}
	return c.JSON(http.StatusOK, archivedMonthJSON{ShardMonth: m.String(), Status: "archived", JobID: j.ID})
}

// monthJob serves the month operations besides archive.
func (s *Server) monthJob(op string) echo.HandlerFunc {
	return func(c echo.Context) error {
		m, err := pathMonth(c)
		if err != nil {
			return err
		}
		a, err := s.archiveOps()
		if err != nil {
			return err
		}
		tenant := c.Param("tenant")
		j, err := s.startJob(c, op, m.String(), func(ctx context.Context, rep jobs.Reporter) (any, error) {
			switch op {
			case "check":
				return a.Archiver.Check(ctx, tenant, m, rep)
			case "drop":
				return nil, a.Archiver.Drop(ctx, tenant, m, rep)
			case "restore":
				return nil, a.Archiver.Restore(ctx, tenant, m, rep)
			}
			return nil, a.Archiver.Purge(ctx, tenant, m, rep)
		})
		if err != nil {
			return err
		}
		return answerJob(c, j)
	}
}

// manifestJSON summarizes a manifest: its topics, without their chunk lists.
type manifestJSON struct {
	Month     string      `json:"month"`
	CreatedAt int64       `json:"created_at"` // Unix ms
	Rows      int64       `json:"rows"`
	Chunks    int         `json:"chunks"`
	Bytes     int64       `json:"bytes"`
	Topics    []topicJSON `json:"topics"`
}

type topicJSON struct {
	Topic  string `json:"topic"`
	MinSeq int64  `json:"min_seq"`
	MaxSeq int64  `json:"max_seq"`
	Count  int64  `json:"count"`
	Chunks int    `json:"chunks"`
}

func manifestSummary(man *archive.Manifest) manifestJSON {
	out := manifestJSON{Month: man.Month, CreatedAt: unixMilli(man.CreatedAt), Rows: man.Rows, Topics: make([]topicJSON, len(man.Topics))}
	for i, t := range man.Topics {
		out.Topics[i] = topicJSON{Topic: t.Topic, MinSeq: t.MinSeq, MaxSeq: t.MaxSeq, Count: t.Count, Chunks: len(t.Chunks)}
		out.Chunks += len(t.Chunks)
		for _, ch := range t.Chunks {
			out.Bytes += ch.Bytes
		}
	}
	return out
}

// archiveManifest answers GET …/shards/{month}/archive with the month's manifest summary.
func (s *Server) archiveManifest(c echo.Context) error {
	m, err := pathMonth(c)
	if err != nil {
		return err
	}
	a, err := s.archiveOps()
	if err != nil {
		return err
	}
	man, err := a.Archiver.Manifest(c.Request().Context(), c.Param("tenant"), m)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, manifestSummary(man))
}

func (s *Server) getJob(c echo.Context) error {
	if s.d.Archive.Jobs == nil {
		return apperr.New(apperr.Busy, "jobs are not available")
	}
	j, err := s.d.Archive.Jobs.Get(c.Param("job_id"))
	if err != nil || j.Tenant != c.Param("tenant") {
		return apperr.New(apperr.NotFound, "no such job")
	}
	return c.JSON(http.StatusOK, newJobJSON(j))
}

// retentionPlan answers with what the tenant's policy would do now.
func (s *Server) retentionPlan(c echo.Context) error {
	if s.d.Archive.Retention == nil {
		return apperr.New(apperr.Busy, "retention is not available")
	}
	plan, err := s.d.Archive.Retention.Plan(c.Request().Context(), c.Param("tenant"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, plan)
}

func (s *Server) runRetention(c echo.Context) error {
	a, err := s.archiveOps()
	if err != nil {
		return err
	}
	if a.Retention == nil {
		return apperr.New(apperr.Busy, "retention is not available")
	}
	tenant := c.Param("tenant")
	j, err := s.startJob(c, "retention", "", func(ctx context.Context, rep jobs.Reporter) (any, error) {
		return a.Retention.Run(ctx, tenant, rep)
	})
	if err != nil {
		return err
	}
	return answerJob(c, j)
}

type reindexRequest struct {
	From string `json:"from,omitempty"` // YYYYMM
	To   string `json:"to,omitempty"`   // YYYYMM
}

// runReindex feeds the stored months to the search and file indexes (the backfill).
func (s *Server) runReindex(c echo.Context) error {
	var req reindexRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	var bounds [2]month.Month
	for i, raw := range []string{req.From, req.To} {
		if raw == "" {
			continue
		}
		m, err := month.Parse(raw)
		if err != nil {
			return apperr.New(apperr.InvalidArgument, "from and to must be YYYYMM")
		}
		bounds[i] = m
	}
	if s.d.Archive.Reindex == nil || s.d.Archive.Jobs == nil {
		return apperr.New(apperr.Busy, "reindexing is not available")
	}
	tenant, rx := c.Param("tenant"), s.d.Archive.Reindex
	j, err := s.startJob(c, "reindex", req.From+"-"+req.To, func(ctx context.Context, rep jobs.Reporter) (any, error) {
		n, err := rx.Run(ctx, tenant, bounds[0], bounds[1], rep)
		return map[string]int64{"messages": n}, err
	})
	if err != nil {
		return err
	}
	return answerJob(c, j)
}

// adminLongSearch is the long-term search over every topic of the tenant.
func (s *Server) adminLongSearch(c echo.Context) error {
	r, err := longSearchRequest(c)
	if err != nil {
		return err
	}
	if r.Topic = c.QueryParam("topic"); r.Topic != "" {
		if _, err := topic.Parse(r.Topic); err != nil {
			return apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
		}
	}
	r.Tenant = c.Param("tenant")
	return s.longSearch(c, r)
}
