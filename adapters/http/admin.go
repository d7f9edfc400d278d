package http

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/history"
)

// empty is the body of successful calls that return nothing.
var empty = struct{}{}

type createUserRequest struct {
	UserID   int64  `json:"user_id"`
	Nickname string `json:"nickname,omitempty"`
}

func (s *Server) createUser(c echo.Context) error {
	var req createUserRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	u := social.User{ID: req.UserID, Nickname: req.Nickname}
	if err := s.d.Admin.CreateUser(c.Request().Context(), c.Param("tenant"), u); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userIDBody{UserID: req.UserID})
}

type issueTokenRequest struct {
	UserID     int64 `json:"user_id"`
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

type tokenJSON struct {
	Token string `json:"token"`
}

func (s *Server) issueToken(c echo.Context) error {
	var req issueTokenRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	// Bounded before the conversion, which would overflow for huge values.
	if req.TTLSeconds < 0 || req.TTLSeconds > int64(admin.MaxTokenTTL/time.Second) {
		return apperr.New(apperr.InvalidArgument, "ttl_seconds out of range")
	}
	tok, err := s.d.Admin.IssueToken(c.Request().Context(), c.Param("tenant"), req.UserID, time.Duration(req.TTLSeconds)*time.Second)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tokenJSON{Token: tok})
}

type friendshipRequest struct {
	UserA int64 `json:"user_a"`
	UserB int64 `json:"user_b"`
}

func (s *Server) addFriendship(c echo.Context) error {
	var req friendshipRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := s.d.Admin.AddFriendship(c.Request().Context(), c.Param("tenant"), req.UserA, req.UserB); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty)
}

type createGroupRequest struct {
	GroupID int64   `json:"group_id"`
	Owner   int64   `json:"owner"`
	Members []int64 `json:"members"`
}

type groupResponse struct {
	GroupID        int64  `json:"group_id"`
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
}

func (s *Server) createGroup(c echo.Context) error {
	var req createGroupRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	conv, err := s.d.Admin.CreateGroup(c.Request().Context(), c.Param("tenant"), req.GroupID, req.Owner, req.Members)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, groupResponse{GroupID: req.GroupID, Topic: conv.Topic, ConversationID: conv.ID})
}

type addMembersRequest struct {
	UserIDs []int64 `json:"user_ids"`
}

func (s *Server) getMessage(c echo.Context) error {
	name, seq, err := pathTopicSeq(c)
	if err != nil {
		return err
	}
	// User 0: an operator reads without membership checks or per-user deletions.
	m, err := s.d.History.Get(c.Request().Context(), c.Param("tenant"), 0, name, seq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, protocol.FromMessage(m))
}

type messagesResponse struct {
	Messages []wire.Message `json:"messages"`
	// Forward pages (since=) also say where to continue and whether more is there.
	LastSeq *int64 `json:"last_seq,omitempty"`
	HasMore *bool  `json:"has_more,omitempty"`
}

// listMessages pages a topic as an operator (user 0: no membership check, no per-user
// deletions).
func (s *Server) listMessages(c echo.Context) error {
	return s.pageTopic(c, c.Param("tenant"), 0)
}

// pageTopic pages a topic for user: since= forward (ascending, tombstones included, as clients
// sync), otherwise backward from before= or the newest (descending, as GET_HISTORY).
func (s *Server) pageTopic(c echo.Context, tenant string, user int64) error {
	name, err := pathTopic(c)
	if err != nil {
		return err
	}
	before, hasBefore, err := queryInt(c, "before")
	if err != nil {
		return err
	}
	since, hasSince, err := queryInt(c, "since")
	if err != nil {
		return err
	}
	if hasBefore && hasSince {
		return apperr.New(apperr.InvalidArgument, "before and since cannot be combined")
	}
	limit, err := queryLimit(c, history.MaxLimit)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if hasSince {
		res, err := s.d.History.Sync(ctx, history.SyncRequest{Tenant: tenant, User: user, Topic: name, Since: since, Limit: limit})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, messagesResponse{
			Messages: s.withReactions(c, user, tenant, res.Messages), LastSeq: &res.LastSeq, HasMore: &res.HasMore,
		})
	}
	ms, err := s.d.History.History(ctx, history.HistoryRequest{Tenant: tenant, User: user, Topic: name, Before: before, Limit: limit})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, messagesResponse{Messages: s.withReactions(c, user, tenant, ms)})
}

type shardRow struct {
	ShardMonth   string      `json:"shard_month"`
	TableName    string      `json:"table_name"`
	Status       shard.State `json:"status"`
	RowCount     int64       `json:"row_count"`
	MinCreatedAt int64       `json:"min_created_at"` // Unix ms, 0 for an empty table
	MaxCreatedAt int64       `json:"max_created_at"`
	UpdatedAt    int64       `json:"updated_at"`
	// TableDropped: archived, and table_name no longer exists (reads go to the archive).
	TableDropped bool `json:"table_dropped"`
	// SealsAt is when a writable or sealing month stops taking late writes (Unix ms).
	SealsAt int64 `json:"seals_at,omitempty"`
}

type shardsJSON struct {
	Shards []shardRow `json:"shards"`
}

func (s *Server) listShards(c echo.Context) error {
	infos, err := s.d.Admin.Shards(c.Request().Context(), c.Param("tenant"))
	if err != nil {
		return err
	}
	rows := make([]shardRow, len(infos))
	for i, in := range infos {
		rows[i] = shardRow{
			ShardMonth:   in.Month.String(),
			TableName:    in.Table,
			Status:       in.State,
			RowCount:     in.RowCount,
			MinCreatedAt: unixMilli(in.MinCreatedAt),
			MaxCreatedAt: unixMilli(in.MaxCreatedAt),
			UpdatedAt:    unixMilli(in.UpdatedAt),
			TableDropped: in.TableDropped,
		}
		if m := s.d.Shards.Manager; m != nil && (in.State == shard.Writable || in.State == shard.Sealing) {
			rows[i].SealsAt = m.SealsAt(in.Month).UnixMilli()
		}
	}
	return c.JSON(http.StatusOK, shardsJSON{Shards: rows})
}

type segmentJSON struct {
	Month  string `json:"month"`
	MinSeq int64  `json:"min_seq"`
	MaxSeq int64  `json:"max_seq"`
	Count  int64  `json:"count"`
}

type routeResponse struct {
	Topic    string        `json:"topic"`
	Segments []segmentJSON `json:"segments"`
}

func (s *Server) rebuildRoute(c echo.Context) error {
	name, err := pathTopic(c)
	if err != nil {
		return err
	}
	rt, err := s.d.Admin.RebuildRoute(c.Request().Context(), c.Param("tenant"), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, routeResponse{Topic: name, Segments: segmentsJSON(rt)})
}

func segmentsJSON(rt route.Route) []segmentJSON {
	out := make([]segmentJSON, len(rt))
	for i, seg := range rt {
		out[i] = segmentJSON{Month: seg.Month.String(), MinSeq: seg.MinSeq, MaxSeq: seg.MaxSeq, Count: seg.Count}
	}
	return out
}

type advanceRequest struct {
	Month string `json:"month"`
}

type activeMonthJSON struct {
	ActiveMonth string `json:"active_month"`
}

func (s *Server) advanceMonth(c echo.Context) error {
	var req advanceRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	active, err := s.d.Admin.AdvanceMonth(c.Request().Context(), c.Param("tenant"), req.Month)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, activeMonthJSON{ActiveMonth: active.String()})
}

// pathTopic validates the topic path parameter, so only canonical topic names reach storage.
func pathTopic(c echo.Context) (string, error) {
	name := c.Param("topic")
	if _, err := topic.Parse(name); err != nil {
		return "", apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
	}
	return name, nil
}

// pathTopicSeq parses the topic and seq of a message from the path.
func pathTopicSeq(c echo.Context) (string, int64, error) {
	name, err := pathTopic(c)
	if err != nil {
		return "", 0, err
	}
	seq, err := pathInt(c, "seq")
	if err != nil {
		return "", 0, err
	}
	return name, seq, nil
}

// pathInt parses a positive decimal id from the path.
func pathInt(c echo.Context, name string) (int64, error) {
	v, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || v <= 0 {
		return 0, apperr.New(apperr.InvalidArgument, name+" must be a positive integer")
	}
	return v, nil
}

// queryInt parses an optional non-negative integer query parameter; empty means absent.
func queryInt(c echo.Context, name string) (v int64, present bool, err error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseInt(raw, 10, 64)
	if err != nil || v < 0 {
		return 0, false, apperr.New(apperr.InvalidArgument, name+" must be a non-negative integer")
	}
	return v, true, nil
}

// queryLimitOr parses ?limit= of an admin listing: def when absent, else 1 to most.
func queryLimitOr(c echo.Context, def, most int64) (int, error) {
	limit, given, err := queryInt(c, "limit")
	if err != nil {
		return 0, err
	}
	if !given {
		return int(def), nil
	}
	if limit < 1 || limit > most {
		return 0, apperr.New(apperr.InvalidArgument, "limit must be 1-"+strconv.FormatInt(most, 10))
	}
	return int(limit), nil
}
