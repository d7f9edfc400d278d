package http

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
)

// errorBody is every error response: a PROTOCOL §5 code and a client-safe message.
type errorBody struct {
	Code apperr.Code `json:"code"`
	Msg  string      `json:"msg"`
}

// statusOf is the HTTP status that fits a contract code.
func statusOf(code apperr.Code) int {
	switch code {
	case apperr.InvalidArgument:
		return http.StatusBadRequest
	case apperr.Unauthenticated:
		return http.StatusUnauthorized
	case apperr.Forbidden:
		return http.StatusForbidden
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.TooLarge:
		return http.StatusRequestEntityTooLarge
	case apperr.RateLimited:
		return http.StatusTooManyRequests
	case apperr.Busy:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fromEcho turns Echo's own errors (no route, wrong method, …) into contract errors.
func fromEcho(he *echo.HTTPError) *apperr.Error {
	switch he.Code {
	case http.StatusNotFound:
		return apperr.New(apperr.NotFound, "no such endpoint")
	case http.StatusMethodNotAllowed:
		return apperr.New(apperr.InvalidArgument, "method not allowed")
	}
	if he.Code >= 400 && he.Code < 500 {
		return apperr.Wrap(apperr.InvalidArgument, http.StatusText(he.Code), he)
	}
	return apperr.Wrap(apperr.Internal, "internal error", he)
}

// contractError is err as the contract error the client gets.
func contractError(err error) error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return fromEcho(he)
	}
	return err
}

// handleError writes err as {"code","msg"}; causes of server-side failures go to the log
// only, never to the client.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	err = contractError(err)
	code := apperr.CodeOf(err)
	status := statusOf(code)
	if status >= http.StatusInternalServerError {
		s.log.ErrorContext(c.Request().Context(), "request failed", "trace_id", traceID(c),
			"method", c.Request().Method, "path", c.Request().URL.Path, "code", int(code), "err", err)
	}
	body := errorBody{Code: code, Msg: apperr.MessageOf(err)}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(status)
	} else {
		err = c.JSON(status, body)
	}
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "writing error response failed", "err", err)
	}
}
