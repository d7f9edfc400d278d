package http

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
)

// InboxOps is what the conversation-list routes need (core/usecase/inbox.Service).
type InboxOps interface {
	// Rebuild replaces a user's lists with ones computed from MySQL and returns how many
	// conversations they hold.
	Rebuild(ctx context.Context, tenant string, user int64) (int, error)
	SetMuted(ctx context.Context, tenant string, user, conversationID int64, muted bool) error
	SetPinned(ctx context.Context, tenant string, user, conversationID int64, pinned bool) error
}

// inboxRoutes adds the conversation-list routes under /admin/v1/tenants/:tenant (DESIGN §5:
// lists rebuild from MySQL after Redis loss, lazily on sync and by this command).
func (s *Server) inboxRoutes(t *echo.Group) {
	if s.d.Inbox == nil {
		return
	}
	t.POST("/users/:user_id/dialogs/rebuild", s.rebuildDialogs)
	t.PUT("/users/:user_id/dialogs/:conversation_id", s.setDialog)
}

type rebuildDialogsResponse struct {
	UserID        int64 `json:"user_id"`
	Conversations int   `json:"conversations"`
}

func (s *Server) rebuildDialogs(c echo.Context) error {
	user, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	n, err := s.d.Inbox.Rebuild(c.Request().Context(), c.Param("tenant"), user)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rebuildDialogsResponse{UserID: user, Conversations: n})
}

// dialogSettings changes the fields it carries; an absent field stays as it is.
type dialogSettings struct {
	Muted  *bool `json:"muted,omitempty"`
	Pinned *bool `json:"pinned,omitempty"`
}

func (s *Server) setDialog(c echo.Context) error {
	user, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	conv, err := pathInt(c, "conversation_id")
	if err != nil {
		return err
	}
	var req dialogSettings
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Muted == nil && req.Pinned == nil {
		return apperr.New(apperr.InvalidArgument, "muted or pinned is required")
	}
	ctx, tenant := c.Request().Context(), c.Param("tenant")
	if req.Muted != nil {
		if err := s.d.Inbox.SetMuted(ctx, tenant, user, conv, *req.Muted); err != nil {
			return err
		}
	}
	if req.Pinned != nil {
		if err := s.d.Inbox.SetPinned(ctx, tenant, user, conv, *req.Pinned); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, empty)
}
