package adminapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// sequence answers GET /jobs/j1 with answers in turn (the last one for good): "503" and
// "close" stand for a stopping and an unreachable imd.
func sequence(t *testing.T, answers ...string) *Client {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		a := answers[min(n, len(answers)-1)]
		n++
		mu.Unlock()
		switch a {
		case "503":
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"code":50301,"msg":"shutting down"}`)
		case "404":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"code":40401,"msg":"no such job"}`)
		case "close":
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		default:
			io.WriteString(w, a)
		}
	}))
	t.Cleanup(srv.Close)
	return New(srv.URL, "k", "acme", nil)
}

const running = `{"job_id":"j1","op":"archive","state":"running","progress":{"phase":"exporting","topics_done":%d,"topics_total":4}}`

func TestFollowRidesOutAnUnansweringServer(t *testing.T) {
	c := sequence(t, strings.Replace(running, "%d", "2", 1), "503", "close",
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
	c := sequence(t, "close", "404")
	j, err := c.Follow(context.Background(), Job{JobID: "j1", State: "running", Op: "archive"}, time.Millisecond, func(Job) {})
	if err == nil || !strings.Contains(err.Error(), "job j1 is gone") || j.Op != "archive" {
		t.Fatalf("Follow = %+v, %v", j, err)
	}
}
