package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/social"
)

// devSignInRequest names the user to sign in as; a nickname also creates (or renames) the user,
// so a developer on a fresh `go tool task run` needs nothing but the web chat (issue 31).
type devSignInRequest struct {
	UserID   int64  `json:"user_id"`
	Nickname string `json:"nickname,omitempty"`
}

type devSignInJSON struct {
	Token  string `json:"token"`
	UserID int64  `json:"user_id"`
}

// devRoutes are the development sign-in (Config.DevSignIn): a token for any user id, with no
// key at all. Anyone who reaches it is anyone they like, so it exists only when the dev config
// switches it on, and production configs never do (DESIGN §12).
func (s *Server) devRoutes(e *echo.Echo) {
	if !s.cfg.DevSignIn {
		return
	}
	e.POST("/dev/v1/tenants/:tenant/signin", s.devSignIn, s.requireTenant)
}

func (s *Server) devSignIn(c echo.Context) error {
	var req devSignInRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ctx, tenant := c.Request().Context(), c.Param("tenant")
	if req.Nickname != "" {
		if err := s.d.Admin.CreateUser(ctx, tenant, social.User{ID: req.UserID, Nickname: req.Nickname}); err != nil {
			return err
		}
	}
	tok, err := s.d.Admin.IssueToken(ctx, tenant, req.UserID, 0)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, devSignInJSON{Token: tok, UserID: req.UserID})
}
