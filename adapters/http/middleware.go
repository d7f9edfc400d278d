package http

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"imd/core/apperr"
)

// logRequests logs every request once it is answered. Errors are written here, not later by
// Echo, so the logged status is the one the client got.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
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
		req := c.Request()
		s.log.LogAttrs(req.Context(), level, "http request",
			slog.String("method", req.Method),
			slog.String("path", req.URL.Path),
			slog.Int("status", status),
			slog.Duration("latency", time.Since(start)),
			slog.String("ip", c.RealIP()),
		)
		return nil
	}
}

func isProbe(route string) bool {
	return route == "/healthz" || route == "/readyz" || route == "/metrics"
}

// recoverPanics turns a handler panic into 50001 and keeps the process serving.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler {
				panic(r) // net/http's way to abort a response; it must reach the server
			}
			s.log.ErrorContext(c.Request().Context(), "handler panicked",
				"method", c.Request().Method, "path", c.Request().URL.Path, "panic", r, "stack", string(debug.Stack()))
			err = apperr.New(apperr.Internal, "internal error")
		}()
		return next(c)
	}
}

// requireAdminKey checks "Authorization: Bearer <admin key>", or else a console session
// (console.go), which the admin key opened. Both sides are hashed before the constant-time
// compare, so neither the key's bytes nor its length leak through timing.
func (s *Server) requireAdminKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		header := c.Request().Header.Get(echo.HeaderAuthorization)
		if header == "" {
			if _, _, ok := s.session(c); ok {
				if err := s.checkSession(c); err != nil {
					return err
				}
				return next(c)
			}
		}
		got, ok := bearer(header)
		if !ok || s.cfg.AdminKey == "" || !equalSecret(got, s.cfg.AdminKey) {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="imd-admin"`)
			return apperr.New(apperr.Unauthenticated, "missing or wrong admin key")
		}
		return next(c)
	}
}

// bearer extracts the token of a Bearer Authorization header; the scheme is case-insensitive
// (RFC 9110 §11.1).
func bearer(header string) (string, bool) {
	const scheme = "bearer "
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", false
	}
	return strings.TrimSpace(header[len(scheme):]), true
}

// requireTenant refuses tenants this process does not serve before any handler runs.
func (s *Server) requireTenant(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.d.Admin.CheckTenant(c.Param("tenant")); err != nil {
			return err
		}
		return next(c)
	}
}
