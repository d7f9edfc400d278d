package http

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
)

// traceKey is where logRequests leaves the request's trace id in the Echo context.
const traceKey = "imd.trace_id"

// requestIDRE is what an X-Request-Id must look like to be taken as the trace id (Nginx's
// $request_id is 32 hex digits); anything else could break log parsing, so a fresh id is used.
var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// logRequests logs every request once it is answered, with the fields of seed 003 §17 the
// HTTP side knows: trace_id (the proxy's X-Request-Id, else a fresh one like the TCP
// listener's; sent back in X-Request-Id), user_id of an authenticated caller, real_ip, and
// the contract code of a failure. Errors are written here, not later by Echo, so the logged
// status is the one the client got.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request()
		trace := req.Header.Get(echo.HeaderXRequestID)
		if !requestIDRE.MatchString(trace) {
			trace = strconv.FormatUint(rand.Uint64(), 16)
		}
		c.Set(traceKey, trace)
		c.Response().Header().Set(echo.HeaderXRequestID, trace)
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		level := slog.LevelInfo
		switch {
		case status >= http.StatusInternalServerError:
			level = slog.LevelError
		case isProbe(c.Path()):
			// Probes and scrapes arrive every few seconds; they would drown the request log.
			level = slog.LevelDebug
		}
		if !s.log.Enabled(req.Context(), level) {
			return nil
		}
		attrs := []slog.Attr{
			slog.String("trace_id", trace),
			slog.String("method", req.Method),
			slog.String("path", req.URL.Path),
			slog.Int("status", status),
			slog.Duration("latency", time.Since(start)),
			slog.String("real_ip", c.RealIP()),
		}
		if who := caller(c); who.UserID != 0 {
			attrs = append(attrs, slog.String("tenant", who.Tenant), slog.Int64("user_id", who.UserID))
		}
		if err != nil {
			attrs = append(attrs, slog.Int("code", int(apperr.CodeOf(contractError(err)))))
		}
		s.log.LogAttrs(req.Context(), level, "http request", attrs...)
		return nil
	}
}

// traceID is the trace id logRequests gave the request.
func traceID(c echo.Context) string {
	id, _ := c.Get(traceKey).(string)
	return id
}

func isProbe(route string) bool {
	return route == "/healthz" || route == "/readyz" || route == "/metrics"
}
