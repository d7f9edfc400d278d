package http

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/usecase/authn"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/core/usecase/presence"
	"github.com/imdhq/imd/core/usecase/read"
	"github.com/imdhq/imd/core/usecase/receipts"
	"github.com/imdhq/imd/core/usecase/reports"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/core/usecase/tenantregistry"
	"github.com/imdhq/imd/core/usecase/uploads"
)

// SocialDeps serve the client API under /api/v1 (client*.go), the admin additions of
// admin_social.go and admin_tenants.go, and the object routes under /files/.
type SocialDeps struct {
	Auth      *authn.Service
	Directory *directory.Service
	Tenants   *tenantregistry.Registry
	Send      *send.Service
	Uploads   *uploads.Service
	Reports   *reports.Service
	// Files serves signed PUT/GET under /files/ (the local-filesystem store); nil leaves the
	// routes out, e.g. when the object store is S3 and serves its own URLs.
	Files FileStore
	// Dialogs pages the Redis conversation lists; nil lists conversations from member rows
	// (seed 003 §11 cold path).
	Dialogs DialogLister
	// Settings changes a user's mute and pin of a conversation; nil answers 50301.
	Settings DialogSettings
	// Reads marks conversations read (READ_MESSAGE); nil answers 50301.
	Reads MessageReader
	// Presence answers presence queries and settings (issue 31); nil answers 50301.
	Presence *presence.Service
	// Receipts answers READ_STATE (issue 31); nil answers 50301.
	Receipts *receipts.Service
}

// DialogLister is core/usecase/inbox.Service's list paging.
type DialogLister interface {
	Dialogs(ctx context.Context, tenant string, user, after int64, limit int) (inbox.DialogPage, error)
}

// DialogSettings is core/usecase/inbox.Service's per-user conversation settings.
type DialogSettings interface {
	SetMuted(ctx context.Context, tenant string, user, conversationID int64, muted bool) error
	SetPinned(ctx context.Context, tenant string, user, conversationID int64, pinned bool) error
}

// MessageReader is core/usecase/read.Service.
type MessageReader interface {
	Read(ctx context.Context, r read.Request) (dialog.Watermark, error)
}

// identityKey is where requireUser leaves the caller's identity in the Echo context.
const identityKey = "imd.identity"

// clientRoutes registers the client API, the object routes and the OpenAPI document.
func (s *Server) clientRoutes(e *echo.Echo) {
	e.GET("/openapi.yaml", s.openAPI)
	s.fileRoutes(e)

	api := e.Group("/api/v1", s.requireUser)
	api.GET("/me", s.getMe)
	api.PUT("/me", s.putMe)
	api.GET("/users/:user_id", s.getUser)
	api.POST("/logout", s.logout)
	s.friendRoutes(api)
	s.presenceRoutes(api)
	s.receiptRoutes(api)
	s.groupRoutes(api)
	s.messageRoutes(api)
	s.pushTokenRoutes(api)
}

// requireUser authenticates "Authorization: Bearer <user token>": a valid token of a served
// tenant, not revoked. Every handler behind it acts for that user in that tenant only. It also
// spends the request from the client address's and then the user's budget (ratelimit.go).
func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		addr := clientAddr(c)
		if !s.limits.allowAddr(addr) {
			return rateLimited(c)
		}
		tok, ok := bearer(c.Request().Header.Get(echo.HeaderAuthorization))
		if !ok {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="imd"`)
			return apperr.New(apperr.Unauthenticated, "missing bearer token")
		}
		who, err := s.d.Social.Auth.AuthenticateRequest(c.Request().Context(), tok)
		if err != nil {
			if apperr.CodeOf(err) == apperr.Unauthenticated {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="imd", error="invalid_token"`)
			}
			return err
		}
		if !s.limits.allowUser(who, addr) {
			return rateLimited(c)
		}
		c.Set(identityKey, who)
		return next(c)
	}
}

// caller is the identity requireUser verified.
func caller(c echo.Context) auth.Identity {
	who, _ := c.Get(identityKey).(auth.Identity)
	return who
}

type profileJSON struct {
	UserID    int64  `json:"user_id"`
	Nickname  string `json:"nickname"`
	Avatar    string `json:"avatar"`
	CreatedAt int64  `json:"created_at,omitzero"` // Unix ms
}

func (s *Server) getMe(c echo.Context) error {
	who := caller(c)
	return s.writeProfile(c, who.Tenant, who.UserID)
}

func (s *Server) getUser(c echo.Context) error {
	id, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	return s.writeProfile(c, caller(c).Tenant, id)
}

func (s *Server) writeProfile(c echo.Context, tenant string, user int64) error {
	p, err := s.d.Social.Directory.Profile(c.Request().Context(), tenant, user)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, profileJSON{UserID: p.UserID, Nickname: p.Nickname, Avatar: p.Avatar, CreatedAt: unixMilli(p.CreatedAt)})
}

// profileUpdate changes the fields it carries.
type profileUpdate struct {
	Nickname *string `json:"nickname"`
	Avatar   *string `json:"avatar"`
}

func (s *Server) putMe(c echo.Context) error {
	var req profileUpdate
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Nickname == nil && req.Avatar == nil {
		return apperr.New(apperr.InvalidArgument, "nickname or avatar is required")
	}
	who, ctx := caller(c), c.Request().Context()
	p, err := s.d.Social.Directory.Profile(ctx, who.Tenant, who.UserID)
	if err != nil {
		return err
	}
	if req.Nickname != nil {
		p.Nickname = *req.Nickname
	}
	if req.Avatar != nil {
		p.Avatar = *req.Avatar
	}
	if err := s.d.Social.Directory.UpdateProfile(ctx, who.Tenant, p); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, profileJSON{UserID: p.UserID, Nickname: p.Nickname, Avatar: p.Avatar, CreatedAt: unixMilli(p.CreatedAt)})
}

// logout revokes the token the request carries.
func (s *Server) logout(c echo.Context) error {
	tok, _ := bearer(c.Request().Header.Get(echo.HeaderAuthorization))
	if err := s.d.Social.Auth.Logout(c.Request().Context(), tok); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

// queryLimit parses the optional limit of a page, at most most; 0 means the default.
func queryLimit(c echo.Context, most int64) (int, error) {
	limit, _, err := queryInt(c, "limit")
	if err != nil {
		return 0, err
	}
	if limit > most {
		return 0, apperr.New(apperr.InvalidArgument, "limit is too large")
	}
	return int(limit), nil
}
