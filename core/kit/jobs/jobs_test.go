package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/kit/jobs"
)

func TestJobsRunOnceAndReportProgress(t *testing.T) {
	js := jobs.NewJobs(time.Now, time.Hour)
	defer js.Close()
	release := make(chan struct{})
	reported := make(chan struct{})
	work := func(_ context.Context, rep jobs.Reporter) (any, error) {
		rep.Report(jobs.Progress{Phase: "export", TopicsDone: 1, TopicsTotal: 2})
		close(reported)
		<-release
		return "manifest", nil
	}
	first := js.Start("t1", "archive", "203101", work)
	<-reported
	again := js.Start("t1", "archive", "203101", work)
	if again.ID != first.ID {
		t.Fatalf("a second start of the running operation made job %s beside %s", again.ID, first.ID)
	}
	other := js.Start("t1", "archive", "203102", func(context.Context, jobs.Reporter) (any, error) {
		return nil, apperr.New(apperr.Conflict, "not sealed")
	})
	running, err := js.Wait(context.Background(), first.ID, 10*time.Millisecond)
	if err != nil || !running.Running() || running.Progress.TopicsDone != 1 {
		t.Fatalf("running job: %+v %v", running, err)
	}
	close(release)
	done, err := js.Wait(context.Background(), first.ID, 5*time.Second)
	if err != nil || done.Running() || done.Err != nil || done.Result != "manifest" {
		t.Fatalf("finished job: %+v %v", done, err)
	}
	failed, _ := js.Wait(context.Background(), other.ID, 5*time.Second)
	if apperr.CodeOf(failed.Err) != apperr.Conflict {
		t.Fatalf("failed job: %+v", failed)
	}
	if _, err := js.Get("nope"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("unknown job: %v", err)
	}
}

func TestCloseCancelsRunningJobs(t *testing.T) {
	js := jobs.NewJobs(time.Now, time.Hour)
	j := js.Start("t1", "retention", "", func(ctx context.Context, _ jobs.Reporter) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	js.Close()
	got, err := js.Get(j.ID)
	if err != nil || !errors.Is(got.Err, context.Canceled) {
		t.Fatalf("after Close: %+v %v", got, err)
	}
}
