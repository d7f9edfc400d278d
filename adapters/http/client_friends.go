package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/usecase/directory"
)

func (s *Server) friendRoutes(api *echo.Group) {
	api.GET("/friends", s.listFriends)
	api.DELETE("/friends/:user_id", s.removeFriend)
	api.GET("/friends/requests", s.listFriendRequests)
	api.POST("/friends/requests", s.requestFriend)
	api.POST("/friends/requests/:user_id/accept", s.acceptFriend)
	api.DELETE("/friends/requests/:user_id", s.deleteFriendRequest)
	api.GET("/blocks", s.listBlocks)
	api.POST("/blocks", s.block)
	api.DELETE("/blocks/:user_id", s.unblock)
}

type userIDsJSON struct {
	UserIDs []int64 `json:"user_ids"`
}

func idsJSON(ids []int64) userIDsJSON {
	if ids == nil {
		ids = []int64{}
	}
	return userIDsJSON{UserIDs: ids}
}

func (s *Server) listFriends(c echo.Context) error {
	return s.writeFriends(c, caller(c).Tenant, caller(c).UserID)
}

// writeFriends answers a page of friends: ?after=<user id>&limit=.
func (s *Server) writeFriends(c echo.Context, tenant string, user int64) error {
	after, _, err := queryInt(c, "after")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, directory.MaxPage)
	if err != nil {
		return err
	}
	ids, err := s.d.Social.Directory.Friends(c.Request().Context(), tenant, user, after, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, idsJSON(ids))
}

func (s *Server) removeFriend(c echo.Context) error {
	other, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	who := caller(c)
	if err := s.d.Social.Directory.RemoveFriend(c.Request().Context(), who.Tenant, who.UserID, other); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

type friendRequestJSON struct {
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	Message   string `json:"message"`
	CreatedAt int64  `json:"created_at"` // Unix ms
}

// listFriendRequests answers ?direction=in (default, requests to the caller) or out.
func (s *Server) listFriendRequests(c echo.Context) error {
	incoming := true
	switch c.QueryParam("direction") {
	case "", "in":
	case "out":
		incoming = false
	default:
		return apperr.New(apperr.InvalidArgument, "direction must be in or out")
	}
	limit, err := queryLimit(c, directory.MaxPage)
	if err != nil {
		return err
	}
	who := caller(c)
	rs, err := s.d.Social.Directory.FriendRequests(c.Request().Context(), who.Tenant, who.UserID, incoming, limit)
	if err != nil {
		return err
	}
	out := make([]friendRequestJSON, len(rs))
	for i, r := range rs {
		out[i] = friendRequestJSON{From: r.From, To: r.To, Message: r.Message, CreatedAt: unixMilli(r.CreatedAt)}
	}
	return c.JSON(http.StatusOK, map[string][]friendRequestJSON{"requests": out})
}

type friendRequestBody struct {
	UserID  int64  `json:"user_id"`
	Message string `json:"message"`
}

// requestFriend asks user_id; when they had asked already, the two become friends at once.
func (s *Server) requestFriend(c echo.Context) error {
	var req friendRequestBody
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.UserID <= 0 {
		return apperr.New(apperr.InvalidArgument, "user_id must be a positive integer")
	}
	who := caller(c)
	friends, err := s.d.Social.Directory.RequestFriend(c.Request().Context(), who.Tenant, who.UserID, req.UserID, req.Message)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"friends": friends})
}

func (s *Server) acceptFriend(c echo.Context) error {
	from, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	who := caller(c)
	if err := s.d.Social.Directory.AcceptFriend(c.Request().Context(), who.Tenant, who.UserID, from); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"friends": true})
}

// deleteFriendRequest declines a request from user_id or withdraws one to them.
func (s *Server) deleteFriendRequest(c echo.Context) error {
	other, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	who := caller(c)
	if err := s.d.Social.Directory.DeleteFriendRequest(c.Request().Context(), who.Tenant, who.UserID, other); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

func (s *Server) listBlocks(c echo.Context) error {
	who := caller(c)
	ids, err := s.d.Social.Directory.Blocked(c.Request().Context(), who.Tenant, who.UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, idsJSON(ids))
}

type userIDBody struct {
	UserID int64 `json:"user_id"`
}

func (s *Server) block(c echo.Context) error {
	var req userIDBody
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.UserID <= 0 {
		return apperr.New(apperr.InvalidArgument, "user_id must be a positive integer")
	}
	who := caller(c)
	if err := s.d.Social.Directory.Block(c.Request().Context(), who.Tenant, who.UserID, req.UserID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

func (s *Server) unblock(c echo.Context) error {
	other, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	who := caller(c)
	if err := s.d.Social.Directory.Unblock(c.Request().Context(), who.Tenant, who.UserID, other); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}
