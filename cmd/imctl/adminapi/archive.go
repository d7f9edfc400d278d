package adminapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// JobProgress is how far an archive, restore, retention or reindex job got.
type JobProgress struct {
	Phase       string `json:"phase"`
	TopicsDone  int    `json:"topics_done"`
	TopicsTotal int    `json:"topics_total"`
	Rows        int64  `json:"rows"`
	Chunks      int    `json:"chunks"`
}

// Job is a server-side operation and its state.
type Job struct {
	JobID      string          `json:"job_id"`
	Op         string          `json:"op"`
	Target     string          `json:"target,omitempty"`
	State      string          `json:"state"` // running | done | failed
	Progress   JobProgress     `json:"progress"`
	StartedAt  int64           `json:"started_at"`
	FinishedAt int64           `json:"finished_at,omitempty"`
	Error      *Error          `json:"error,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
}

// Manifest summarizes an archived month.
type Manifest struct {
	Month     string          `json:"month"`
	CreatedAt int64           `json:"created_at"`
	Rows      int64           `json:"rows"`
	Chunks    int             `json:"chunks"`
	Bytes     int64           `json:"bytes"`
	Topics    []ManifestTopic `json:"topics"`
}

// ManifestTopic is one topic of an archived month.
type ManifestTopic struct {
	Topic  string `json:"topic"`
	MinSeq int64  `json:"min_seq"`
	MaxSeq int64  `json:"max_seq"`
	Count  int64  `json:"count"`
	Chunks int    `json:"chunks"`
}

// monthArchive answers the archive route: the month, its state, and the job that archives it.
type monthArchive struct {
	ShardMonth string `json:"shard_month"`
	Status     string `json:"status"`
	JobID      string `json:"job_id,omitempty"`
}

// MonthOp starts an operation on a month — archive, archive/check, drop, restore or purge —
// without waiting for it.
func (c *Client) MonthOp(ctx context.Context, op, month string) (Job, error) {
	path := "/shards/" + url.PathEscape(month) + "/" + op + "?wait=0s"
	if op == "archive" {
		// The archive route answers like the state-only archive it replaced; the job follows.
		var started monthArchive
		if err := c.do(ctx, http.MethodPost, path, nil, &started); err != nil {
			return Job{}, err
		}
		return c.Job(ctx, started.JobID)
	}
	var j Job
	err := c.do(ctx, http.MethodPost, path, nil, &j)
	return j, err
}

// RunRetention starts the tenant's retention plan.
func (c *Client) RunRetention(ctx context.Context) (Job, error) {
	var j Job
	err := c.do(ctx, http.MethodPost, "/retention/run?wait=0s", nil, &j)
	return j, err
}

type reindexRequest struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Reindex starts feeding the months in [from, to] (YYYYMM, "" unbounded) to the indexes.
func (c *Client) Reindex(ctx context.Context, from, to string) (Job, error) {
	var j Job
	err := c.do(ctx, http.MethodPost, "/search/reindex?wait=0s", reindexRequest{from, to}, &j)
	return j, err
}

// Job reads a job.
func (c *Client) Job(ctx context.Context, id string) (Job, error) {
	var j Job
	err := c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(id), nil, &j)
	return j, err
}

// Follow polls a job every interval, calling progress on each change, until it ends; a
// failed job is returned with its error. An imd that does not answer for a while is polled
// on; one that restarted has lost the job (jobs live in its memory), which Follow says.
func (c *Client) Follow(ctx context.Context, j Job, interval time.Duration, progress func(Job)) (Job, error) {
	last := JobProgress{Phase: "-"}
	for {
		if j.Progress != last {
			progress(j)
			last = j.Progress
		}
		switch j.State {
		case "done":
			return j, nil
		case "failed":
			if j.Error == nil {
				return j, fmt.Errorf("job %s failed", j.JobID)
			}
			j.Error.Method, j.Error.Path = "job", j.JobID
			return j, j.Error
		}
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-time.After(interval):
		}
		next, err := c.Job(ctx, j.JobID)
		switch {
		case err == nil:
			j = next
		case CodeOf(err) == 40401:
			return j, fmt.Errorf("job %s is gone (imd restarted?): see the month's state with `imctl shards` and run the operation again: %w", j.JobID, err)
		case ctx.Err() == nil && Retryable(err):
			// imd restarting or unreachable: poll on
		default:
			return j, err
		}
	}
}

// Manifest reads an archived month's manifest summary.
func (c *Client) Manifest(ctx context.Context, month string) (Manifest, error) {
	var m Manifest
	err := c.do(ctx, http.MethodGet, "/shards/"+url.PathEscape(month)+"/archive", nil, &m)
	return m, err
}

// RetentionPlan reads what the tenant's policy asks for now.
func (c *Client) RetentionPlan(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.do(ctx, http.MethodGet, "/retention", nil, &raw)
	return raw, err
}
