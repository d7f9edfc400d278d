package prometheus

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestListenerServesOnlyMetrics(t *testing.T) {
	m := New(nil)
	m.Inc("tcp_frames_in_total")
	l := m.Listener("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err := l.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Stop(t.Context()) })
	for _, c := range []struct {
		path string
		want int
	}{{"/metrics", http.StatusOK}, {"/healthz", http.StatusNotFound}, {"/admin/v1/tenants/default/users", http.StatusNotFound}} {
		resp, err := http.Get("http://" + l.Addr() + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s = %d, want %d", c.path, resp.StatusCode, c.want)
		}
		if c.want == http.StatusOK && !strings.Contains(string(body), "tcp_frames_in_total 1") {
			t.Errorf("GET %s lacks the recorded counter", c.path)
		}
	}
}
