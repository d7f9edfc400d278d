package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol/dispatch"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/receipts"
)

// receiptRoutes are READ_STATE in REST form (issue 31): the same use case, body and codes.
func (s *Server) receiptRoutes(api *echo.Group) {
	api.POST("/read-state", s.readState)
}

func (s *Server) readState(c echo.Context) error {
	if s.d.Social.Receipts == nil {
		return apperr.New(apperr.Busy, "read receipts not served here")
	}
	var req wire.ReadStateRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	st, err := s.d.Social.Receipts.ReadState(c.Request().Context(), receipts.StateRequest{
		Tenant: caller(c).Tenant, User: caller(c).UserID, Seq: req.Seq,
		Address: conversation.Address{Topic: req.Topic, ConversationID: req.ConversationID, ToUser: req.ToUser},
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, dispatch.WireReadState(st))
}
