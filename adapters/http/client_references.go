package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/usecase/favorites"
	"github.com/imdhq/imd/core/usecase/forward"
	"github.com/imdhq/imd/core/usecase/groupfiles"
	"github.com/imdhq/imd/core/usecase/longsearch"
	"github.com/imdhq/imd/core/usecase/reactions"
	"github.com/imdhq/imd/core/usecase/replies"
)

// ReferenceOps serve the client routes of this file: references into messages by topic+seq
// that work across months, archive and restore (seed 000 §8), and the long-term search (seed
// 000 §6.6). Nil services answer 50301.
type ReferenceOps struct {
	Favorites *favorites.Service
	Files     *groupfiles.Service
	Replies   *replies.Service
	// Reactions serves the reaction and pin routes of client_reactions.go and the reaction
	// summaries of the caller's message pages.
	Reactions *reactions.Service
	// Forward serves POST /api/v1/messages/forward (client_forward.go).
	Forward *forward.Service
}

// referenceRoutes registers the client routes; they authenticate like the rest of /api/v1.
func (s *Server) referenceRoutes(e *echo.Echo) {
	api := e.Group("/api/v1", s.requireUser)
	api.GET("/topics/:topic/messages/:seq/reply", s.replyPreview)
	api.POST("/favorites", s.addFavorite)
	api.GET("/favorites", s.listFavorites)
	api.DELETE("/favorites/:topic/:seq", s.removeFavorite)
	api.GET("/groups/:group_id/files", s.groupFiles)
	api.GET("/search", s.userLongSearch)
}

func unavailable(what string) error { return apperr.New(apperr.Busy, what+" not available") }

type previewJSON struct {
	Topic     string         `json:"topic"`
	Seq       int64          `json:"seq"`
	MsgID     int64          `json:"msg_id"`
	From      int64          `json:"from"`
	Type      string         `json:"type"`
	Status    message.Status `json:"status"`
	Text      string         `json:"text"`
	Truncated bool           `json:"truncated"`
	CreatedAt int64          `json:"created_at"` // Unix ms
}

// replyPreview answers with a short preview of the message that message {seq} replies to.
func (s *Server) replyPreview(c echo.Context) error {
	name, seq, err := pathTopicSeq(c)
	if err != nil {
		return err
	}
	if s.d.References.Replies == nil {
		return unavailable("reply previews are")
	}
	who := caller(c)
	p, err := s.d.References.Replies.Of(c.Request().Context(), who.Tenant, who.UserID, name, seq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, previewJSON(replyJSON(p)))
}

func replyJSON(p replies.Preview) previewJSON {
	return previewJSON{
		Topic: p.Topic, Seq: p.Seq, MsgID: p.MsgID, From: p.From, Type: p.Type, Status: p.Status,
		Text: p.Text, Truncated: p.Truncated, CreatedAt: p.CreatedAt,
	}
}

type favoriteRequest struct {
	Topic string `json:"topic"`
	Seq   int64  `json:"seq"`
}

// favoriteJSON is a saved message; Message is null when the caller can no longer read it.
type favoriteJSON struct {
	FavoriteID int64         `json:"favorite_id"`
	Topic      string        `json:"topic"`
	Seq        int64         `json:"seq"`
	CreatedAt  int64         `json:"created_at"` // Unix ms
	Message    *wire.Message `json:"message"`
}

type favoritesJSON struct {
	Favorites []favoriteJSON `json:"favorites"`
	// Before is the cursor of the next page (the smallest favorite_id here); 0 at the end.
	Before int64 `json:"before"`
}

func (s *Server) addFavorite(c echo.Context) error {
	var req favoriteRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if _, err := topic.Parse(req.Topic); err != nil || req.Seq <= 0 {
		return apperr.New(apperr.InvalidArgument, "a valid topic and a positive seq are required")
	}
	if s.d.References.Favorites == nil {
		return unavailable("favorites are")
	}
	who := caller(c)
	f, err := s.d.References.Favorites.Add(c.Request().Context(), who.Tenant, who.UserID, req.Topic, req.Seq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, favoriteJSON{FavoriteID: f.ID, Topic: f.Topic, Seq: f.Seq, CreatedAt: unixMilli(f.CreatedAt)})
}

func (s *Server) listFavorites(c echo.Context) error {
	before, _, err := queryInt(c, "before")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, favorites.MaxLimit)
	if err != nil {
		return err
	}
	if s.d.References.Favorites == nil {
		return unavailable("favorites are")
	}
	who := caller(c)
	saved, err := s.d.References.Favorites.List(c.Request().Context(), who.Tenant, who.UserID, before, limit)
	if err != nil {
		return err
	}
	out := favoritesJSON{Favorites: make([]favoriteJSON, len(saved))}
	for i, f := range saved {
		out.Favorites[i] = favoriteJSON{FavoriteID: f.ID, Topic: f.Topic, Seq: f.Seq, CreatedAt: unixMilli(f.CreatedAt)}
		if f.Message != nil {
			m := protocol.FromMessage(*f.Message)
			out.Favorites[i].Message = &m
		}
	}
	if limit == 0 {
		limit = favorites.DefaultLimit
	}
	if n := len(saved); n > 0 && n == limit {
		out.Before = saved[n-1].ID
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) removeFavorite(c echo.Context) error {
	name, seq, err := pathTopicSeq(c)
	if err != nil {
		return err
	}
	if s.d.References.Favorites == nil {
		return unavailable("favorites are")
	}
	who := caller(c)
	if err := s.d.References.Favorites.Remove(c.Request().Context(), who.Tenant, who.UserID, name, seq); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

type fileJSON struct {
	Topic       string `json:"topic"`
	Seq         int64  `json:"seq"`
	MsgID       int64  `json:"msg_id"`
	From        int64  `json:"from"`
	Name        string `json:"name"`
	Size        int64  `json:"size"`
	Key         string `json:"key"`
	ContentType string `json:"content_type,omitempty"`
	CreatedAt   int64  `json:"created_at"` // Unix ms
}

type filesJSON struct {
	Files []fileJSON `json:"files"`
	// Before is the cursor of the next page (a seq); 0 when this page reached the oldest file.
	Before int64 `json:"before"`
}

// groupFiles lists a group's file messages, newest first: ?before=&limit=.
func (s *Server) groupFiles(c echo.Context) error {
	groupID, err := pathInt(c, "group_id")
	if err != nil {
		return err
	}
	before, _, err := queryInt(c, "before")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, groupfiles.MaxLimit)
	if err != nil {
		return err
	}
	if s.d.References.Files == nil {
		return unavailable("group files are")
	}
	who := caller(c)
	files, next, err := s.d.References.Files.List(c.Request().Context(), who.Tenant, who.UserID, groupID, before, limit)
	if err != nil {
		return err
	}
	out := filesJSON{Files: make([]fileJSON, len(files)), Before: next}
	for i, f := range files {
		out.Files[i] = fileJSON{
			Topic: f.Topic, Seq: f.Seq, MsgID: f.MsgID, From: f.From, Name: f.Name, Size: f.Size, Key: f.Key,
			ContentType: f.ContentType, CreatedAt: unixMilli(f.CreatedAt),
		}
	}
	return c.JSON(http.StatusOK, out)
}

type searchJSON struct {
	Messages   []wire.Message `json:"messages"`
	NextOffset int            `json:"next_offset"`
	HasMore    bool           `json:"has_more"`
}

// longSearchRequest reads ?q=&from=&to=&offset=&limit= (times optional, RFC 3339 or Unix ms).
func longSearchRequest(c echo.Context) (longsearch.Request, error) {
	var r longsearch.Request
	r.Text = c.QueryParam("q")
	for name, dst := range map[string]*time.Time{"from": &r.From, "to": &r.To} {
		if c.QueryParam(name) == "" {
			continue
		}
		t, err := queryTime(c, name)
		if err != nil {
			return r, err
		}
		*dst = t
	}
	offset, _, err := queryInt(c, "offset")
	if err != nil {
		return r, err
	}
	if offset > longsearch.MaxOffset {
		return r, apperr.New(apperr.InvalidArgument, "offset must be 0-1000")
	}
	limit, err := queryLimit(c, longsearch.MaxLimit)
	if err != nil {
		return r, err
	}
	r.Offset, r.Limit = int(offset), limit
	return r, nil
}

// userLongSearch searches the caller's conversations (or ?topic= one of them) over all
// months, archived ones included.
func (s *Server) userLongSearch(c echo.Context) error {
	r, err := longSearchRequest(c)
	if err != nil {
		return err
	}
	if r.Topic = c.QueryParam("topic"); r.Topic != "" {
		if _, err := topic.Parse(r.Topic); err != nil {
			return apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
		}
	}
	who := caller(c)
	r.Tenant, r.User = who.Tenant, who.UserID
	return s.longSearch(c, r)
}

func (s *Server) longSearch(c echo.Context, r longsearch.Request) error {
	if s.d.Archive.Search == nil {
		return unavailable("search is")
	}
	res, err := s.d.Archive.Search.Search(c.Request().Context(), r)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, searchJSON{Messages: protocol.FromMessages(res.Messages), NextOffset: res.NextOffset, HasMore: res.HasMore})
}
