package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/usecase/directory"
)

func (s *Server) groupRoutes(api *echo.Group) {
	api.POST("/groups", s.createUserGroup)
	api.GET("/groups", s.listMyGroups)
	api.GET("/groups/:group_id", s.getGroup)
	api.GET("/groups/:group_id/members", s.listMembers)
	api.POST("/groups/:group_id/members", s.addGroupMembers)
	api.DELETE("/groups/:group_id/members/:user_id", s.removeGroupMember)
	api.PUT("/groups/:group_id/members/:user_id/role", s.setMemberRole)
	api.PUT("/groups/:group_id/members/:user_id/mute", s.muteMember)
	api.PUT("/groups/:group_id/mute_all", s.setMuteAll)
	api.PUT("/groups/:group_id/owner", s.transferOwnership)
}

type userGroupRequest struct {
	GroupID int64   `json:"group_id"` // optional: the server picks one
	Name    string  `json:"name"`
	Members []int64 `json:"members"`
}

func (s *Server) createUserGroup(c echo.Context) error {
	var req userGroupRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	who := caller(c)
	conv, err := s.d.Social.Directory.CreateGroup(c.Request().Context(), who.Tenant, who.UserID,
		directory.NewGroup{ID: req.GroupID, Name: req.Name, Members: req.Members})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, groupResponse{GroupID: conv.GroupID, Topic: conv.Topic, ConversationID: conv.ID})
}

type conversationsJSON struct {
	Conversations []conversationJSON `json:"conversations"`
}

type conversationJSON struct {
	ConversationID int64  `json:"conversation_id"`
	Topic          string `json:"topic"`
	Kind           string `json:"kind"` // p2p | group
	GroupID        int64  `json:"group_id,omitempty"`
}

func kindName(k social.ConversationKind) string {
	if k == social.KindGroup {
		return "group"
	}
	return "p2p"
}

func newConversationsJSON(cs []social.Conversation) conversationsJSON {
	out := conversationsJSON{Conversations: make([]conversationJSON, len(cs))}
	for i, cv := range cs {
		out.Conversations[i] = conversationJSON{ConversationID: cv.ID, Topic: cv.Topic, Kind: kindName(cv.Kind), GroupID: cv.GroupID}
	}
	return out
}

// listMyGroups pages the caller's groups: ?after=<conversation id>&limit=.
func (s *Server) listMyGroups(c echo.Context) error {
	return s.writeUserGroups(c, caller(c).Tenant, caller(c).UserID)
}

func (s *Server) writeUserGroups(c echo.Context, tenant string, user int64) error {
	after, _, err := queryInt(c, "after")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, directory.MaxPage)
	if err != nil {
		return err
	}
	cs, err := s.d.Social.Directory.UserGroups(c.Request().Context(), tenant, user, after, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newConversationsJSON(cs))
}

type groupInfoJSON struct {
	GroupID        int64  `json:"group_id"`
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	Owner          int64  `json:"owner"`
	Name           string `json:"name"`
	MuteAll        bool   `json:"mute_all"`
	CreatedAt      int64  `json:"created_at"` // Unix ms
}

func (s *Server) getGroup(c echo.Context) error {
	return s.writeGroup(c, caller(c).Tenant, caller(c).UserID)
}

func (s *Server) writeGroup(c echo.Context, tenant string, actor int64) error {
	id, err := pathInt(c, "group_id")
	if err != nil {
		return err
	}
	g, err := s.d.Social.Directory.Group(c.Request().Context(), tenant, actor, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, groupInfoJSON{
		GroupID: g.ID, Topic: topic.ForGroup(g.ID), ConversationID: g.ConversationID, Owner: g.Owner, Name: g.Name,
		MuteAll: g.MuteAll, CreatedAt: unixMilli(g.CreatedAt),
	})
}

type memberJSON struct {
	UserID     int64  `json:"user_id"`
	Role       string `json:"role"`
	MutedUntil int64  `json:"muted_until,omitzero"` // Unix ms; absent when not muted
	JoinedAt   int64  `json:"joined_at,omitzero"`   // Unix ms
}

type membersJSON struct {
	Members []memberJSON `json:"members"`
}

func (s *Server) listMembers(c echo.Context) error {
	return s.writeMembers(c, caller(c).Tenant, caller(c).UserID)
}

// writeMembers answers a page of members: ?after=<user id>&limit=.
func (s *Server) writeMembers(c echo.Context, tenant string, actor int64) error {
	id, err := pathInt(c, "group_id")
	if err != nil {
		return err
	}
	after, _, err := queryInt(c, "after")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, directory.MaxPage)
	if err != nil {
		return err
	}
	ms, err := s.d.Social.Directory.Members(c.Request().Context(), tenant, actor, id, after, limit)
	if err != nil {
		return err
	}
	out := make([]memberJSON, len(ms))
	now := time.Now()
	for i, m := range ms {
		out[i] = memberJSON{UserID: m.UserID, Role: string(m.Role), JoinedAt: unixMilli(m.JoinedAt)}
		if m.MutedAt(now) {
			out[i].MutedUntil = m.MutedUntil.UnixMilli()
		}
	}
	return c.JSON(http.StatusOK, membersJSON{Members: out})
}

func (s *Server) addGroupMembers(c echo.Context) error {
	return s.doAddMembers(c, caller(c).Tenant, caller(c).UserID)
}

func (s *Server) doAddMembers(c echo.Context, tenant string, actor int64) error {
	id, err := pathInt(c, "group_id")
	if err != nil {
		return err
	}
	var req addMembersRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := s.d.Social.Directory.AddMembers(c.Request().Context(), tenant, actor, id, req.UserIDs); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

// removeGroupMember removes user_id; a member removing themself leaves the group.
func (s *Server) removeGroupMember(c echo.Context) error {
	return s.doRemoveMember(c, caller(c).Tenant, caller(c).UserID)
}

func (s *Server) doRemoveMember(c echo.Context, tenant string, actor int64) error {
	id, user, err := groupAndUser(c)
	if err != nil {
		return err
	}
	if err := s.d.Social.Directory.RemoveMember(c.Request().Context(), tenant, actor, id, user); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

type roleRequest struct {
	Role string `json:"role"`
}

func (s *Server) setMemberRole(c echo.Context) error {
	return s.doSetRole(c, caller(c).Tenant, caller(c).UserID)
}

func (s *Server) doSetRole(c echo.Context, tenant string, actor int64) error {
	id, user, err := groupAndUser(c)
	if err != nil {
		return err
	}
	var req roleRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := s.d.Social.Directory.SetRole(c.Request().Context(), tenant, actor, id, user, social.Role(req.Role)); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

// muteRequest mutes for duration_seconds; 0 unmutes.
type muteRequest struct {
	DurationSeconds *int64 `json:"duration_seconds"`
}

func (s *Server) muteMember(c echo.Context) error {
	return s.doMuteMember(c, caller(c).Tenant, caller(c).UserID)
}

func (s *Server) doMuteMember(c echo.Context, tenant string, actor int64) error {
	id, user, err := groupAndUser(c)
	if err != nil {
		return err
	}
	var req muteRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	// Bounded before the conversion, which would overflow for huge values.
	if req.DurationSeconds == nil || *req.DurationSeconds < 0 || *req.DurationSeconds > int64(directory.MaxMute/time.Second) {
		return apperr.New(apperr.InvalidArgument, "duration_seconds is required: 0 (unmute) to 31622400")
	}
	d := time.Duration(*req.DurationSeconds) * time.Second
	if err := s.d.Social.Directory.MuteMember(c.Request().Context(), tenant, actor, id, user, d); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

type muteAllRequest struct {
	MuteAll *bool `json:"mute_all"`
}

func (s *Server) setMuteAll(c echo.Context) error {
	return s.doSetMuteAll(c, caller(c).Tenant, caller(c).UserID)
}

func (s *Server) doSetMuteAll(c echo.Context, tenant string, actor int64) error {
	id, err := pathInt(c, "group_id")
	if err != nil {
		return err
	}
	var req muteAllRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.MuteAll == nil {
		return apperr.New(apperr.InvalidArgument, "mute_all is required")
	}
	if err := s.d.Social.Directory.SetMuteAll(c.Request().Context(), tenant, actor, id, *req.MuteAll); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, req)
}

// ownerRequest names the member who takes the group over.
type ownerRequest struct {
	UserID int64 `json:"user_id"`
}

type ownerJSON struct {
	GroupID int64 `json:"group_id"`
	Owner   int64 `json:"owner"`
}

// transferOwnership hands the caller's group to another member; the caller becomes an admin.
func (s *Server) transferOwnership(c echo.Context) error {
	return s.doTransferOwnership(c, caller(c).Tenant, caller(c).UserID)
}

func (s *Server) doTransferOwnership(c echo.Context, tenant string, actor int64) error {
	id, err := pathInt(c, "group_id")
	if err != nil {
		return err
	}
	var req ownerRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := s.d.Social.Directory.TransferOwnership(c.Request().Context(), tenant, actor, id, req.UserID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ownerJSON{GroupID: id, Owner: req.UserID})
}

func groupAndUser(c echo.Context) (groupID, user int64, err error) {
	if groupID, err = pathInt(c, "group_id"); err != nil {
		return 0, 0, err
	}
	if user, err = pathInt(c, "user_id"); err != nil {
		return 0, 0, err
	}
	return groupID, user, nil
}
