package http

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/usecase/history"
)

// queryRoutes are the admin reads beyond PROTOCOL §6's minimum: context around a message and
// short-term search (seed 000 §6.5, §6.6).
func (s *Server) queryRoutes(t *echo.Group) {
	t.GET("/topics/:topic/messages/:seq/context", s.messageContext)
	t.GET("/search", s.searchMessages)
}

// messageContext answers GET …/messages/{seq}/context?n= with up to n messages on each side of
// seq and seq itself, ascending.
func (s *Server) messageContext(c echo.Context) error {
	name, seq, err := pathTopicSeq(c)
	if err != nil {
		return err
	}
	n, _, err := queryInt(c, "n")
	if err != nil {
		return err
	}
	if n > history.MaxContext { // checked here too, so the int conversion below cannot overflow
		return apperr.New(apperr.InvalidArgument, "n must be 1-100")
	}
	ms, err := s.d.History.Context(c.Request().Context(), history.ContextRequest{
		Tenant: c.Param("tenant"), Topic: name, Seq: seq, N: int(n),
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, messagesResponse{Messages: protocol.FromMessages(ms)})
}

// searchMessages answers GET …/search?from=&to=&q=&topic=&limit=, newest first.
func (s *Server) searchMessages(c echo.Context) error {
	from, err := queryTime(c, "from")
	if err != nil {
		return err
	}
	to, err := queryTime(c, "to")
	if err != nil {
		return err
	}
	limit, _, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	if limit > history.MaxLimit {
		return apperr.New(apperr.InvalidArgument, "limit must be 1-200")
	}
	ms, err := s.d.History.Search(c.Request().Context(), history.SearchRequest{
		Tenant: c.Param("tenant"), Topic: c.QueryParam("topic"), Text: c.QueryParam("q"),
		From: from, To: to, Limit: int(limit),
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, messagesResponse{Messages: protocol.FromMessages(ms)})
}

// queryTime parses a required time parameter: RFC 3339 or Unix milliseconds.
func queryTime(c echo.Context, name string) (time.Time, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return time.Time{}, apperr.New(apperr.InvalidArgument, name+" is required (RFC 3339 or Unix ms)")
	}
	if ms, err := strconv.ParseInt(raw, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, apperr.New(apperr.InvalidArgument, name+" must be RFC 3339 or Unix ms")
	}
	return t.UTC(), nil
}
