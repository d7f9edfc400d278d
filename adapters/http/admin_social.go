package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/reports"
)

// adminSocialRoutes adds user and group management, token revocation, statistics and reports
// under /admin/v1/tenants/:tenant (issue 6, beyond PROTOCOL §6). The operator acts as
// directory.Operator: no role checks, and events name no acting user.
func (s *Server) adminSocialRoutes(t *echo.Group) {
	t.GET("/users/:user_id", s.adminGetUser)
	t.DELETE("/users/:user_id", s.adminDeleteUser)
	t.GET("/users/:user_id/status", s.adminUserStatus)
	t.PUT("/users/:user_id/status", s.adminSetUserStatus)
	t.GET("/users/:user_id/groups", s.adminUserGroups)
	t.GET("/users/:user_id/friends", s.adminUserFriends)
	t.GET("/users/:user_id/blocks", s.adminUserBlocks)
	t.DELETE("/friendships/:user_a/:user_b", s.adminRemoveFriendship)
	t.POST("/blocks", s.adminBlock)
	t.DELETE("/blocks/:user_id/:blocked_user_id", s.adminUnblock)
	t.GET("/groups/:group_id", s.adminGetGroup)
	t.GET("/groups/:group_id/members", s.adminListMembers)
	t.DELETE("/groups/:group_id/members/:user_id", s.adminRemoveMember)
	t.PUT("/groups/:group_id/members/:user_id/role", s.adminSetRole)
	t.PUT("/groups/:group_id/members/:user_id/mute", s.adminMuteMember)
	t.PUT("/groups/:group_id/mute_all", s.adminSetMuteAll)
	t.PUT("/groups/:group_id/owner", s.adminTransferOwnership)
	t.POST("/tokens/revoke", s.revokeTokens)
	t.GET("/stats", s.stats)
	t.GET("/reports", s.listReports)
	t.PUT("/reports/:report_id", s.setReportStatus)
}

func (s *Server) adminGetUser(c echo.Context) error {
	id, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	return s.writeProfile(c, c.Param("tenant"), id)
}

type userStatusRequest struct {
	Status string `json:"status"`
}

type userStatusJSON struct {
	UserID int64  `json:"user_id"`
	Status string `json:"status"`
}

func (s *Server) adminUserStatus(c echo.Context) error {
	id, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	st, err := s.d.Social.Directory.UserStatus(c.Request().Context(), c.Param("tenant"), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userStatusJSON{UserID: id, Status: st.String()})
}

// adminSetUserStatus disables or enables a user; deleting is DELETE, which is final.
func (s *Server) adminSetUserStatus(c echo.Context) error {
	id, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	var req userStatusRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ctx, tenant := c.Request().Context(), c.Param("tenant")
	switch req.Status {
	case social.UserDisabled.String():
		err = s.d.Social.Directory.DisableUser(ctx, tenant, id)
	case social.UserActive.String():
		err = s.d.Social.Directory.EnableUser(ctx, tenant, id)
	default:
		return apperr.New(apperr.InvalidArgument, "status must be active or disabled (DELETE deletes)")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userStatusJSON{UserID: id, Status: req.Status})
}

func (s *Server) adminDeleteUser(c echo.Context) error {
	id, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	if err := s.d.Social.Directory.DeleteUser(c.Request().Context(), c.Param("tenant"), id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userStatusJSON{UserID: id, Status: social.UserDeleted.String()})
}

func (s *Server) adminUserGroups(c echo.Context) error {
	id, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	return s.writeUserGroups(c, c.Param("tenant"), id)
}

func (s *Server) adminUserFriends(c echo.Context) error {
	id, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	return s.writeFriends(c, c.Param("tenant"), id)
}

func (s *Server) adminUserBlocks(c echo.Context) error {
	id, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	ids, err := s.d.Social.Directory.Blocked(c.Request().Context(), c.Param("tenant"), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, idsJSON(ids))
}

func (s *Server) adminRemoveFriendship(c echo.Context) error {
	a, err := pathInt(c, "user_a")
	if err != nil {
		return err
	}
	b, err := pathInt(c, "user_b")
	if err != nil {
		return err
	}
	if err := s.d.Social.Directory.RemoveFriendship(c.Request().Context(), c.Param("tenant"), a, b); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

type blockRequest struct {
	UserID        int64 `json:"user_id"`
	BlockedUserID int64 `json:"blocked_user_id"`
}

func (s *Server) adminBlock(c echo.Context) error {
	var req blockRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.UserID <= 0 || req.BlockedUserID <= 0 {
		return apperr.New(apperr.InvalidArgument, "user_id and blocked_user_id must be positive integers")
	}
	ctx, tenant := c.Request().Context(), c.Param("tenant")
	// The blocking user must exist too; users block only as themselves, so only here.
	if _, err := s.d.Social.Directory.Profile(ctx, tenant, req.UserID); err != nil {
		return err
	}
	if err := s.d.Social.Directory.Block(ctx, tenant, req.UserID, req.BlockedUserID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

func (s *Server) adminUnblock(c echo.Context) error {
	user, err := pathInt(c, "user_id")
	if err != nil {
		return err
	}
	blocked, err := pathInt(c, "blocked_user_id")
	if err != nil {
		return err
	}
	if err := s.d.Social.Directory.Unblock(c.Request().Context(), c.Param("tenant"), user, blocked); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

func (s *Server) adminGetGroup(c echo.Context) error {
	return s.writeGroup(c, c.Param("tenant"), directory.Operator)
}

func (s *Server) adminListMembers(c echo.Context) error {
	return s.writeMembers(c, c.Param("tenant"), directory.Operator)
}

func (s *Server) adminAddMembers(c echo.Context) error {
	return s.doAddMembers(c, c.Param("tenant"), directory.Operator)
}

func (s *Server) adminRemoveMember(c echo.Context) error {
	return s.doRemoveMember(c, c.Param("tenant"), directory.Operator)
}

func (s *Server) adminSetRole(c echo.Context) error {
	return s.doSetRole(c, c.Param("tenant"), directory.Operator)
}

func (s *Server) adminMuteMember(c echo.Context) error {
	return s.doMuteMember(c, c.Param("tenant"), directory.Operator)
}

func (s *Server) adminSetMuteAll(c echo.Context) error {
	return s.doSetMuteAll(c, c.Param("tenant"), directory.Operator)
}

func (s *Server) adminTransferOwnership(c echo.Context) error {
	return s.doTransferOwnership(c, c.Param("tenant"), directory.Operator)
}

// revokeRequest names one token, or a user whose every token issued so far is revoked.
type revokeRequest struct {
	Token  string `json:"token,omitempty"`
	UserID int64  `json:"user_id,omitempty"`
}

// revokedJSON says what was revoked: a token, or a user's tokens issued before a time.
type revokedJSON struct {
	Revoked      string `json:"revoked"` // token | user
	UserID       int64  `json:"user_id,omitempty"`
	IssuedBefore int64  `json:"issued_before,omitempty"` // Unix ms
}

func (s *Server) revokeTokens(c echo.Context) error {
	var req revokeRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ctx, tenant := c.Request().Context(), c.Param("tenant")
	switch {
	case (req.Token == "") == (req.UserID == 0):
		return apperr.New(apperr.InvalidArgument, "exactly one of token and user_id is required")
	case req.Token != "":
		if err := s.d.Social.Auth.RevokeToken(ctx, tenant, req.Token); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, revokedJSON{Revoked: "token"})
	}
	at, err := s.d.Social.Auth.RevokeUser(ctx, tenant, req.UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, revokedJSON{Revoked: "user", UserID: req.UserID, IssuedBefore: at.UnixMilli()})
}

type monthStatsJSON struct {
	Month       string `json:"month"`
	Table       string `json:"table_name"`
	Status      string `json:"status"`
	Messages    int64  `json:"messages"`
	Topics      int64  `json:"topics"`
	GroupTopics int64  `json:"group_topics"`
	P2PTopics   int64  `json:"p2p_topics"`
	FirstAt     int64  `json:"first_at"` // Unix ms, 0 for an empty month
	LastAt      int64  `json:"last_at"`
}

type dayStatsJSON struct {
	Day           string `json:"day"` // YYYY-MM-DD, UTC
	Messages      int64  `json:"messages"`
	GroupMessages int64  `json:"group_messages"`
	P2PMessages   int64  `json:"p2p_messages"`
}

type statsJSON struct {
	Users  int64            `json:"users"`
	Groups int64            `json:"groups"`
	Months []monthStatsJSON `json:"months"`
	Days   []dayStatsJSON   `json:"days"`
}

// stats answers ?from=&to=, each optional, a date YYYY-MM-DD (UTC) or a month YYYYMM, which
// stands for its first day as from and its last day as to.
func (s *Server) stats(c echo.Context) error {
	from, err := queryDay(c, "from", false)
	if err != nil {
		return err
	}
	to, err := queryDay(c, "to", true)
	if err != nil {
		return err
	}
	st, err := s.d.Admin.Stats(c.Request().Context(), c.Param("tenant"), from, to)
	if err != nil {
		return err
	}
	out := statsJSON{
		Users: st.Totals.Users, Groups: st.Totals.Groups,
		Months: make([]monthStatsJSON, len(st.Months)), Days: make([]dayStatsJSON, len(st.Days)),
	}
	for i, m := range st.Months {
		out.Months[i] = monthStatsJSON{
			Month: m.Month.String(), Table: m.Table, Status: string(m.State), Messages: m.Messages,
			Topics: m.Topics, GroupTopics: m.GroupTopics, P2PTopics: m.P2PTopics,
			FirstAt: unixMilli(m.FirstAt), LastAt: unixMilli(m.LastAt),
		}
	}
	for i, d := range st.Days {
		out.Days[i] = dayStatsJSON{
			Day: d.Day.Format(time.DateOnly), Messages: d.Messages, GroupMessages: d.GroupMessages, P2PMessages: d.P2PMessages,
		}
	}
	return c.JSON(http.StatusOK, out)
}

// queryDay reads an optional date YYYY-MM-DD or month YYYYMM; a month is its first day, or
// its last one when last is set. Absent is the zero time.
func queryDay(c echo.Context, name string, last bool) (time.Time, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return time.Time{}, nil
	}
	if d, err := time.Parse(time.DateOnly, raw); err == nil {
		return d, nil
	}
	m, err := month.Parse(raw)
	if err != nil {
		return time.Time{}, apperr.New(apperr.InvalidArgument, name+" must be a date YYYY-MM-DD or a month YYYYMM")
	}
	if last {
		return m.End().AddDate(0, 0, -1), nil
	}
	return m.Start(), nil
}

type reportsJSON struct {
	Reports []reportJSON `json:"reports"`
}

// listReports answers ?status=&before=<report id>&limit=, newest first, with evidence.
func (s *Server) listReports(c echo.Context) error {
	before, _, err := queryInt(c, "before")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, reports.MaxPage)
	if err != nil {
		return err
	}
	rs, err := s.d.Social.Reports.List(c.Request().Context(), c.Param("tenant"), social.ReportQuery{
		Status: social.ReportStatus(c.QueryParam("status")), Before: before, Limit: limit,
	})
	if err != nil {
		return err
	}
	out := make([]reportJSON, len(rs))
	for i, r := range rs {
		out[i] = reportJSON{
			ReportID: r.ID, Reporter: r.Reporter, Topic: r.Topic, Seq: r.Seq, Reason: r.Reason, Status: string(r.Status),
			CreatedAt: unixMilli(r.CreatedAt), UpdatedAt: unixMilli(r.UpdatedAt),
		}
		if r.Evidence != nil {
			m := protocol.FromMessage(*r.Evidence)
			out[i].Evidence = &m
		}
	}
	return c.JSON(http.StatusOK, reportsJSON{Reports: out})
}

type reportStatusRequest struct {
	Status string `json:"status"`
}

type reportStatusJSON struct {
	ReportID int64  `json:"report_id"`
	Status   string `json:"status"`
}

func (s *Server) setReportStatus(c echo.Context) error {
	id, err := pathInt(c, "report_id")
	if err != nil {
		return err
	}
	var req reportStatusRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := s.d.Social.Reports.SetStatus(c.Request().Context(), c.Param("tenant"), id, social.ReportStatus(req.Status)); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, reportStatusJSON{ReportID: id, Status: req.Status})
}
