package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/core/usecase/webhooks"
)

// webhookRoutes manage the tenant's event webhook endpoints (docs/DESIGN.md issue-32 part 2).
// A secret is in the answers of the create and of a rotation only, so reading the admin API
// later cannot leak it.
func (s *Server) webhookRoutes(t *echo.Group) {
	t.GET("/webhooks", s.listWebhooks)
	t.POST("/webhooks", s.createWebhook)
	t.GET("/webhooks/:webhook_id", s.getWebhook)
	t.PUT("/webhooks/:webhook_id", s.updateWebhook)
	t.DELETE("/webhooks/:webhook_id", s.deleteWebhook)
	t.POST("/webhooks/:webhook_id/secret", s.rotateWebhookSecret)
	t.GET("/webhooks/:webhook_id/dead_letters", s.webhookDeadLetters)
	t.POST("/webhooks/:webhook_id/replay", s.replayWebhook)
}

func (s *Server) webhookService() (*webhooks.Service, error) {
	if s.d.Webhooks == nil {
		return nil, apperr.New(apperr.Busy, "webhooks unavailable")
	}
	return s.d.Webhooks, nil
}

// webhookTarget is the service and the endpoint id of a route under /webhooks/:webhook_id.
func (s *Server) webhookTarget(c echo.Context) (*webhooks.Service, int64, error) {
	svc, err := s.webhookService()
	if err != nil {
		return nil, 0, err
	}
	id, err := pathInt(c, "webhook_id")
	return svc, id, err
}

// withSecret answers e with its secret: the create and the rotation only.
func withSecret(c echo.Context, e webhook.Endpoint) error {
	out := webhookOf(e)
	out.Secret = e.Secret
	return c.JSON(http.StatusOK, out)
}

type webhookRequest struct {
	URL         string   `json:"url"`
	Description string   `json:"description,omitempty"`
	Events      []string `json:"events"`
	// Enabled is true when left out: an endpoint is made to receive.
	Enabled *bool `json:"enabled,omitempty"`
	// BotID binds the endpoint to a bot: only the conversations it may read (0: all).
	BotID int64 `json:"bot_id,omitempty"`
}

func (r webhookRequest) settings() webhooks.Settings {
	set := webhooks.Settings{URL: r.URL, Description: r.Description, Enabled: r.Enabled == nil || *r.Enabled, BotID: r.BotID}
	for _, e := range r.Events {
		set.Events = append(set.Events, webhook.EventType(e))
	}
	return set
}

type webhookJSON struct {
	// ID is a string of digits: ids pass 2^53, past which JavaScript rounds numbers (the
	// console would show, and look up, another id).
	ID          int64    `json:"webhook_id,string"`
	URL         string   `json:"url"`
	Description string   `json:"description"`
	Events      []string `json:"events"`
	Enabled     bool     `json:"enabled"`
	BotID       int64    `json:"bot_id,omitempty"`
	Secret      string   `json:"secret,omitempty"`
	CreatedAt   int64    `json:"created_at"`
	UpdatedAt   int64    `json:"updated_at"`
}

// webhookOf renders e without its secret; the two answers that show it set it afterwards.
func webhookOf(e webhook.Endpoint) webhookJSON {
	out := webhookJSON{ID: e.ID, URL: e.URL, Description: e.Description, Events: make([]string, len(e.Events)),
		Enabled: e.Enabled, BotID: e.BotID, CreatedAt: unixMilli(e.CreatedAt), UpdatedAt: unixMilli(e.UpdatedAt)}
	for i, t := range e.Events {
		out.Events[i] = string(t)
	}
	return out
}

type webhooksJSON struct {
	Webhooks []webhookJSON `json:"webhooks"`
}

func (s *Server) listWebhooks(c echo.Context) error {
	svc, err := s.webhookService()
	if err != nil {
		return err
	}
	es, err := svc.List(c.Request().Context(), c.Param("tenant"))
	if err != nil {
		return err
	}
	out := webhooksJSON{Webhooks: make([]webhookJSON, len(es))}
	for i, e := range es {
		out.Webhooks[i] = webhookOf(e)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) createWebhook(c echo.Context) error {
	svc, err := s.webhookService()
	if err != nil {
		return err
	}
	var req webhookRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	e, err := svc.Create(c.Request().Context(), c.Param("tenant"), req.settings())
	if err != nil {
		return err
	}
	return withSecret(c, e)
}

func (s *Server) getWebhook(c echo.Context) error {
	svc, id, err := s.webhookTarget(c)
	if err != nil {
		return err
	}
	e, err := svc.Get(c.Request().Context(), c.Param("tenant"), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookOf(e))
}

func (s *Server) updateWebhook(c echo.Context) error {
	svc, id, err := s.webhookTarget(c)
	if err != nil {
		return err
	}
	var req webhookRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	e, err := svc.Update(c.Request().Context(), c.Param("tenant"), id, req.settings())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookOf(e))
}

func (s *Server) deleteWebhook(c echo.Context) error {
	svc, id, err := s.webhookTarget(c)
	if err != nil {
		return err
	}
	if err := svc.Delete(c.Request().Context(), c.Param("tenant"), id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

func (s *Server) rotateWebhookSecret(c echo.Context) error {
	svc, id, err := s.webhookTarget(c)
	if err != nil {
		return err
	}
	e, err := svc.RotateSecret(c.Request().Context(), c.Param("tenant"), id)
	if err != nil {
		return err
	}
	return withSecret(c, e)
}

type deadLetterJSON struct {
	Topic     string `json:"topic"`
	Seq       int64  `json:"seq"`
	Type      string `json:"type"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
	At        int64  `json:"at"`
}

type deadLettersJSON struct {
	DeadLetters []deadLetterJSON `json:"dead_letters"`
}

// webhookDeadLetters answers ?limit= (default and most: webhooks.MaxDeadLetters) of the
// endpoint's dead letters, oldest first.
func (s *Server) webhookDeadLetters(c echo.Context) error {
	svc, id, err := s.webhookTarget(c)
	if err != nil {
		return err
	}
	limit, err := queryLimitOr(c, webhooks.MaxDeadLetters, webhooks.MaxDeadLetters)
	if err != nil {
		return err
	}
	ds, err := svc.DeadLetters(c.Request().Context(), c.Param("tenant"), id, limit)
	if err != nil {
		return err
	}
	out := deadLettersJSON{DeadLetters: make([]deadLetterJSON, len(ds))}
	for i, d := range ds {
		out.DeadLetters[i] = deadLetterJSON{Topic: d.Topic, Seq: d.Seq, Type: string(d.Type), Attempts: d.Attempts, LastError: d.LastError,
			At: unixMilli(d.At)}
	}
	return c.JSON(http.StatusOK, out)
}

type replayRequest struct {
	// Since is Unix ms; a pointer, since a missing since must be refused rather than read as
	// "from the beginning" (DESIGN issue-32 "Replay from a point").
	Since *int64 `json:"since"`
}

// replayWebhook delivers the endpoint's events again from since on.
func (s *Server) replayWebhook(c echo.Context) error {
	svc, id, err := s.webhookTarget(c)
	if err != nil {
		return err
	}
	var req replayRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Since == nil {
		return apperr.New(apperr.InvalidArgument, "since (Unix ms) is required")
	}
	if err := svc.Replay(c.Request().Context(), c.Param("tenant"), id, time.UnixMilli(*req.Since)); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}
