package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/reactions"
)

// reactionRoutes are the REST forms of ADD_REACTION, REMOVE_REACTION, GET_REACTIONS, the pin
// commands and FORWARD_MESSAGE (issue 31); they authenticate like the rest of /api/v1.
func (s *Server) reactionRoutes(e *echo.Echo) {
	api := e.Group("/api/v1", s.requireUser)
	api.GET("/topics/:topic/messages/:seq/reactions", s.listReactions)
	api.POST("/topics/:topic/messages/:seq/reactions", s.addReaction)
	api.DELETE("/topics/:topic/messages/:seq/reactions", s.removeReaction)
	api.GET("/topics/:topic/pins", s.listPins)
	api.PUT("/topics/:topic/pins/:seq", s.pinMessage)
	api.DELETE("/topics/:topic/pins/:seq", s.unpinMessage)
	api.POST("/messages/forward", s.forwardMessage)
}

// reactionRequest names the emoji and, optionally, the device that gets no push of the event.
type reactionRequest struct {
	Emoji    string `json:"emoji"`
	DeviceID uint64 `json:"device_id"`
}

// reactionTarget reads the message the route names; a server without the reaction store
// answers 50301.
func (s *Server) reactionTarget(c echo.Context, device uint64) (reactions.Target, error) {
	if s.d.References.Reactions == nil {
		return reactions.Target{}, unavailable("reactions and pins are")
	}
	name, seq, err := pathTopicSeq(c)
	if err != nil {
		return reactions.Target{}, err
	}
	who := caller(c)
	return reactions.Target{Tenant: who.Tenant, User: who.UserID, Device: device, Topic: name, Seq: seq}, nil
}

func (s *Server) addReaction(c echo.Context) error {
	var req reactionRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	return s.react(c, req, false)
}

// removeReaction takes the emoji from ?emoji=, which spares clients escaping it into a path.
func (s *Server) removeReaction(c echo.Context) error {
	return s.react(c, reactionRequest{Emoji: c.QueryParam("emoji")}, true)
}

func (s *Server) react(c echo.Context, req reactionRequest, remove bool) error {
	t, err := s.reactionTarget(c, req.DeviceID)
	if err != nil {
		return err
	}
	sum, err := s.d.References.Reactions.React(c.Request().Context(), t, req.Emoji, remove)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, protocol.ReactionSummaryOf(sum))
}

func (s *Server) listReactions(c echo.Context) error {
	limit, err := queryLimit(c, reactions.MaxReactors)
	if err != nil {
		return err
	}
	t, err := s.reactionTarget(c, 0)
	if err != nil {
		return err
	}
	rs, err := s.d.References.Reactions.Reactors(c.Request().Context(), t, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, protocol.Reactors(t.Topic, t.Seq, rs))
}

func (s *Server) listPins(c echo.Context) error {
	if s.d.References.Reactions == nil {
		return unavailable("reactions and pins are")
	}
	name, err := pathTopic(c)
	if err != nil {
		return err
	}
	who := caller(c)
	pins, err := s.d.References.Reactions.Pins(c.Request().Context(), who.Tenant, who.UserID, name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, protocol.Pins(name, pins))
}

func (s *Server) pinMessage(c echo.Context) error { return s.pin(c, false) }

func (s *Server) unpinMessage(c echo.Context) error { return s.pin(c, true) }

func (s *Server) pin(c echo.Context, unpin bool) error {
	t, err := s.reactionTarget(c, 0)
	if err != nil {
		return err
	}
	pins, err := s.d.References.Reactions.Pin(c.Request().Context(), t, unpin)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, protocol.Pins(t.Topic, pins))
}

// withReactions converts a page of one topic's messages with each one's reaction summary as
// user sees it; admin reads (user 0) have no "mine" and get none.
func (s *Server) withReactions(c echo.Context, user int64, tenant string, msgs []message.Message) []wire.Message {
	out := protocol.FromMessages(msgs)
	if user == 0 || s.d.References.Reactions == nil {
		return out
	}
	return protocol.WithReactions(out, s.d.References.Reactions.Summaries(c.Request().Context(), tenant, user, msgs))
}
