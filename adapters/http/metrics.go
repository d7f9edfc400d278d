package http

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// unmatchedRoute labels requests no route matched, so scans of random paths add one series,
// not one per path.
const unmatchedRoute = "unmatched"

// recordRequests feeds http_requests_total and http_request_duration_seconds. It answers an
// error itself, so the code it records is the one the client got, whatever runs outside it.
func (s *Server) recordRequests(next echo.HandlerFunc) echo.HandlerFunc {
	if s.d.RequestMetrics == nil {
		return next
	}
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" || c.Response().Status == http.StatusNotFound && route == "/*" {
			route = unmatchedRoute
		}
		method := c.Request().Method
		s.d.RequestMetrics.Inc("http_requests_total", route, method, strconv.Itoa(c.Response().Status))
		s.d.RequestMetrics.Observe("http_request_duration_seconds", time.Since(start).Seconds(), route, method)
		return nil
	}
}
