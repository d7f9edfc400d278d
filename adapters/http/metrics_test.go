package http

import (
	"net/http"
	"testing"

	"github.com/imdhq/imd/adapters/memory"
)

func TestRequestMetricsUseTheRouteTemplate(t *testing.T) {
	m := memory.NewMetrics()
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{RequestMetrics: m})
	h.do(http.MethodGet, "/healthz", "")
	h.do(http.MethodGet, "/healthz", "")
	h.doWith(http.MethodPost, "/admin/v1/tenants/default/users", `{"user_id":1}`, nil) // no key: 401
	h.do(http.MethodGet, "/no/such/path/42", "")
	h.do(http.MethodGet, "/no/such/path/43", "")

	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"/healthz", "GET", "200"}, 2},
		{[]string{"/admin/v1/tenants/:tenant/users", "POST", "401"}, 1},
		{[]string{unmatchedRoute, "GET", "404"}, 2},
	} {
		if got := m.Count("http_requests_total", c.labels...); got != c.want {
			t.Errorf("http_requests_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := m.Count("http_request_duration_seconds", "/healthz", "GET"); got != 2 {
		t.Errorf("http_request_duration_seconds{/healthz GET} observed %v times, want 2", got)
	}
}
