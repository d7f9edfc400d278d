package http

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/pushtoken"
)

// PushTokenOps registers native push tokens (core/usecase/nativepush.Registry).
type PushTokenOps interface {
	Register(ctx context.Context, tenant string, user int64, body []byte) (pushtoken.Token, error)
	Unregister(ctx context.Context, tenant string, user int64, deviceID string) error
	DeadLetters(ctx context.Context, tenant, provider string, limit int) ([]pushtoken.DeadLetter, error)
}

// pushTokenRoutes are PUSH_TOKEN_SET and PUSH_TOKEN_DELETE in REST form (issue 32, docs/PROTOCOL.md): the same parser, the same codes.
func (s *Server) pushTokenRoutes(api *echo.Group) {
	api.PUT("/push-tokens", s.putPushToken)
	api.DELETE("/push-tokens", s.deletePushToken)
}

func (s *Server) putPushToken(c echo.Context) error {
	if s.d.PushTokens == nil {
		return apperr.New(apperr.Busy, "push tokens not served here")
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, pushtoken.MaxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return apperr.Wrap(apperr.InvalidArgument, "push token body too large", err)
	}
	if err != nil {
		return apperr.Wrap(apperr.InvalidArgument, "push token body not read", err)
	}
	who := caller(c)
	t, err := s.d.PushTokens.Register(c.Request().Context(), who.Tenant, who.UserID, body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pushtoken.Registration{DeviceID: t.DeviceID, Platform: t.Platform, AppID: t.AppID, Token: t.Token, Locale: t.Locale})
}

func (s *Server) deletePushToken(c echo.Context) error {
	if s.d.PushTokens == nil {
		return apperr.New(apperr.Busy, "push tokens not served here")
	}
	who := caller(c)
	if err := s.d.PushTokens.Unregister(c.Request().Context(), who.Tenant, who.UserID, c.QueryParam("device_id")); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, struct{}{})
}
