package http

import (
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
)

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
			s.log.ErrorContext(c.Request().Context(), "handler panicked", "trace_id", traceID(c),
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
