package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol/dispatch"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
)

// presenceRoutes are QUERY_PRESENCE and SETTINGS in REST form (issue 31): the same use case,
// the same bodies and codes.
func (s *Server) presenceRoutes(api *echo.Group) {
	api.POST("/presence", s.queryPresence)
	api.GET("/settings", s.getSettings)
	api.PATCH("/settings", s.changeSettings)
}

func (s *Server) queryPresence(c echo.Context) error {
	if s.d.Social.Presence == nil {
		return apperr.New(apperr.Busy, "presence not served here")
	}
	var req wire.QueryPresenceRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	sts, err := s.d.Social.Presence.Query(c.Request().Context(), caller(c).Tenant, caller(c).UserID, req.UserIDs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.QueryPresenceResponse{Presence: dispatch.WirePresence(sts)})
}

func (s *Server) getSettings(c echo.Context) error {
	return s.applySettings(c, social.SettingsChange{})
}

func (s *Server) changeSettings(c echo.Context) error {
	var req wire.SettingsRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	return s.applySettings(c, social.SettingsChange{HidePresence: req.HidePresence, HideReceipts: req.HideReceipts})
}

// applySettings changes what ch names (nothing: a read) and answers the settings as stored.
func (s *Server) applySettings(c echo.Context, ch social.SettingsChange) error {
	if s.d.Social.Presence == nil {
		return apperr.New(apperr.Busy, "settings not served here")
	}
	st, err := s.d.Social.Presence.ChangeSettings(c.Request().Context(), caller(c).Tenant, caller(c).UserID, ch)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.Settings{HidePresence: st.HidePresence, HideReceipts: st.HideReceipts})
}
