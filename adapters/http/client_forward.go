package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/clients/go/wire"
)

// forwardRequest is FORWARD_MESSAGE's body plus the optional sending device.
type forwardRequest struct {
	wire.ForwardMessageRequest
	DeviceID uint64 `json:"device_id"` // optional: this device gets no copy
}

// forwardMessage is the REST form of FORWARD_MESSAGE (issue 31): the copy goes through the
// send path and is acknowledged like POST /api/v1/messages.
func (s *Server) forwardMessage(c echo.Context) error {
	var req forwardRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if s.d.References.Forward == nil {
		return unavailable("forwarding is")
	}
	who := caller(c)
	fr, err := protocol.ForwardRequest(req.ForwardMessageRequest, who.Tenant, who.UserID, req.DeviceID)
	if err != nil {
		return err
	}
	res, err := s.d.References.Forward.Forward(c.Request().Context(), fr)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, protocol.SendAckOf(res))
}
