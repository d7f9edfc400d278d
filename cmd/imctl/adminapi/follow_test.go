package adminapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/cmd/imctl/adminapi/adminapitest"
)

func sequence(t *testing.T, answers ...string) *Client {
	return New(adminapitest.Sequence(t, answers...).URL, "k", "acme", nil)
}

const running = `{"job_id":"j1","op":"archive","state":"running","progress":{"phase":"exporting","topics_done":%d,"topics_total":4}}`

func TestFollowRidesOutAnUnansweringServer(t *testing.T) {
	c := sequence(t, strings.Replace(running, "%d", "2", 1), adminapitest.Unavailable, adminapitest.Hangup,
		`{"job_id":"j1","op":"archive","state":"done","progress":{"phase":"done","topics_done":4,"topics_total":4}}`)
	var seen []string
	j, err := c.Follow(context.Background(), Job{JobID: "j1", State: "running"}, time.Millisecond, func(j Job) { seen = append(seen, j.Progress.Phase) })
	if err != nil || j.State != "done" {
		t.Fatalf("Follow = %+v, %v", j, err)
	}
	if strings.Join(seen, ",") != ",exporting,done" {
		t.Fatalf("progress calls %v", seen)
	}
}

func TestFollowSaysWhenTheJobIsGone(t *testing.T) {
	c := sequence(t, adminapitest.Hangup, adminapitest.NotFound)
	j, err := c.Follow(context.Background(), Job{JobID: "j1", State: "running", Op: "archive"}, time.Millisecond, func(Job) {})
	if err == nil || !strings.Contains(err.Error(), "job j1 is gone") || j.Op != "archive" {
		t.Fatalf("Follow = %+v, %v", j, err)
	}
}
