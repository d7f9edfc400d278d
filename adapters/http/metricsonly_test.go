package http

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
)

func TestMetricsOnlyServesNothingElse(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "tcp_connections 3\n")
	})
	s := NewMetricsOnly("127.0.0.1:0", metrics, slog.New(slog.DiscardHandler))
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(t.Context()) })
	for _, c := range []struct {
		path string
		want int
	}{{"/metrics", http.StatusOK}, {"/healthz", http.StatusNotFound}, {"/admin/v1/tenants/default/users", http.StatusNotFound}, {"/debug/pprof/", http.StatusNotFound}} {
		resp, err := http.Get("http://" + s.Addr() + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s = %d, want %d", c.path, resp.StatusCode, c.want)
		}
		if c.want == http.StatusOK && string(body) != "tcp_connections 3\n" {
			t.Errorf("GET %s = %q", c.path, body)
		}
	}
}
