// Package adminapitest fakes an imd admin API that changes over time, for tests of clients
// that poll it: each request gets the next canned answer.
package adminapitest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Stand-ins among the answers for an imd that is not serving normally.
const (
	Unavailable = "503"   // answers 503 with code 50301, as a stopping imd does
	NotFound    = "404"   // answers 404 with code 40401
	Hangup      = "close" // closes the connection without an answer, as a dead imd does
)

// Sequence serves answers in turn to every request, the last one for good, and is closed
// at the end of the test.
func Sequence(t *testing.T, answers ...string) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		a := answers[min(n, len(answers)-1)]
		n++
		mu.Unlock()
		switch a {
		case Unavailable:
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"code":50301,"msg":"shutting down"}`)
		case NotFound:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"code":40401,"msg":"not found"}`)
		case Hangup:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			io.WriteString(w, a)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
