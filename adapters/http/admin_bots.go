package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/bot"
	"github.com/imdhq/imd/core/usecase/bots"
)

// botRoutes make and list the tenant's bot accounts (docs/DESIGN.md issue-32 part 2 "Bots"):
// a bot's token is in the answer of its create and of a new token only.
func (s *Server) botRoutes(t *echo.Group) {
	t.GET("/bots", s.listBots)
	t.POST("/bots", s.createBot)
	t.POST("/bots/:bot_id/token", s.botToken)
	t.DELETE("/bots/:bot_id", s.deleteBot)
}

func (s *Server) botService() (*bots.Service, error) {
	if s.d.Bots == nil {
		return nil, apperr.New(apperr.Busy, "bots unavailable")
	}
	return s.d.Bots, nil
}

type botRequest struct {
	BotID int64  `json:"bot_id"`
	Name  string `json:"name"`
}

type botJSON struct {
	BotID     int64  `json:"bot_id"`
	Name      string `json:"name"`
	CreatedAt int64  `json:"created_at"`
	Token     string `json:"token,omitempty"`
}

func botOf(b bot.Bot) botJSON {
	return botJSON{BotID: b.UserID, Name: b.Name, CreatedAt: unixMilli(b.CreatedAt)}
}

type botsJSON struct {
	Bots []botJSON `json:"bots"`
}

func (s *Server) listBots(c echo.Context) error {
	svc, err := s.botService()
	if err != nil {
		return err
	}
	bs, err := svc.List(c.Request().Context(), c.Param("tenant"))
	if err != nil {
		return err
	}
	out := botsJSON{Bots: make([]botJSON, len(bs))}
	for i, b := range bs {
		out.Bots[i] = botOf(b)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) createBot(c echo.Context) error {
	svc, err := s.botService()
	if err != nil {
		return err
	}
	var req botRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	b, tok, err := svc.Create(c.Request().Context(), c.Param("tenant"), req.BotID, req.Name)
	if err != nil {
		return err
	}
	out := botOf(b)
	out.Token = tok
	return c.JSON(http.StatusOK, out)
}

// botTarget is the service and the bot id of a route under /bots/:bot_id.
func (s *Server) botTarget(c echo.Context) (*bots.Service, int64, error) {
	svc, err := s.botService()
	if err != nil {
		return nil, 0, err
	}
	id, err := pathInt(c, "bot_id")
	return svc, id, err
}

func (s *Server) botToken(c echo.Context) error {
	svc, id, err := s.botTarget(c)
	if err != nil {
		return err
	}
	tok, err := svc.Token(c.Request().Context(), c.Param("tenant"), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tokenJSON{Token: tok})
}

func (s *Server) deleteBot(c echo.Context) error {
	svc, id, err := s.botTarget(c)
	if err != nil {
		return err
	}
	if err := svc.Delete(c.Request().Context(), c.Param("tenant"), id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}
