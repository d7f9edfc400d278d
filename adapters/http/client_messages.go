package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/core/usecase/read"
)

func (s *Server) messageRoutes(api *echo.Group) {
	api.GET("/conversations", s.listConversations)
	api.PUT("/conversations/:conversation_id/settings", s.setConversationSettings)
	api.POST("/read", s.markRead)
	api.GET("/topics/:topic/messages", s.userMessages)
	api.GET("/topics/:topic/messages/:seq", s.userMessage)
	api.POST("/messages", s.sendUserMessage)
	api.POST("/uploads", s.upload)
	api.POST("/uploads/complete", s.completeUpload)
	api.POST("/downloads", s.download)
	api.POST("/reports", s.fileReport)
}

// dialogJSON is one entry of the conversation list.
type dialogJSON struct {
	ConversationID int64           `json:"conversation_id"`
	Topic          string          `json:"topic"`
	Score          int64           `json:"score,omitempty"` // last message time, Unix ms
	LastSeq        int64           `json:"last_seq"`
	ReadSeq        int64           `json:"read_seq"`
	Unread         int64           `json:"unread"`
	Muted          bool            `json:"muted"`
	Pinned         bool            `json:"pinned"`
	Preview        *dialog.Preview `json:"preview,omitempty"`
}

type dialogsJSON struct {
	Conversations []dialogJSON `json:"conversations"`
	// After is the cursor of the next page: a list score from the dialog lists, a
	// conversation id from member rows (Source says which).
	After   int64  `json:"after"`
	HasMore bool   `json:"has_more"`
	Source  string `json:"source"` // dialogs | members
}

// listConversations pages the caller's conversation list: ?after=&limit=. With the Redis
// dialog lists it is ordered by last message time (seed 003 §11); without, by conversation id
// from the member rows, with no counts or previews.
func (s *Server) listConversations(c echo.Context) error {
	after, _, err := queryInt(c, "after")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, inbox.MaxLimit)
	if err != nil {
		return err
	}
	who, ctx := caller(c), c.Request().Context()
	if s.d.Social.Dialogs != nil {
		page, err := s.d.Social.Dialogs.Dialogs(ctx, who.Tenant, who.UserID, after, limit)
		if err != nil {
			return err
		}
		out := dialogsJSON{Conversations: make([]dialogJSON, len(page.Dialogs)), After: page.After, HasMore: page.HasMore, Source: "dialogs"}
		for i, d := range page.Dialogs {
			out.Conversations[i] = dialogJSON{
				ConversationID: d.ConversationID, Topic: d.Topic, Score: d.Score, LastSeq: d.LastSeq, ReadSeq: d.ReadSeq,
				Unread: d.Unread, Muted: d.Muted, Pinned: d.Pinned,
			}
			if d.Preview.MsgID != 0 {
				p := d.Preview
				out.Conversations[i].Preview = &p
			}
		}
		return c.JSON(http.StatusOK, out)
	}
	if limit == 0 {
		limit = inbox.DefaultLimit
	}
	cs, err := s.d.Social.Directory.UserConversations(ctx, who.Tenant, who.UserID, after, limit)
	if err != nil {
		return err
	}
	// A full page may be followed by an empty one; member rows are cheap to ask again.
	out := dialogsJSON{After: after, Source: "members", HasMore: len(cs) == limit}
	out.Conversations = make([]dialogJSON, len(cs))
	for i, cv := range cs {
		out.Conversations[i] = dialogJSON{ConversationID: cv.ID, Topic: cv.Topic}
		out.After = cv.ID
	}
	return c.JSON(http.StatusOK, out)
}

// settingsRequest changes the fields it carries; an absent field stays as it is.
type settingsRequest struct {
	Muted  *bool `json:"muted"`
	Pinned *bool `json:"pinned"`
}

func (s *Server) setConversationSettings(c echo.Context) error {
	conv, err := pathInt(c, "conversation_id")
	if err != nil {
		return err
	}
	var req settingsRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Muted == nil && req.Pinned == nil {
		return apperr.New(apperr.InvalidArgument, "muted or pinned is required")
	}
	if s.d.Social.Settings == nil {
		return apperr.New(apperr.Busy, "conversation settings are not available")
	}
	who, ctx := caller(c), c.Request().Context()
	if req.Muted != nil {
		if err := s.d.Social.Settings.SetMuted(ctx, who.Tenant, who.UserID, conv, *req.Muted); err != nil {
			return err
		}
	}
	if req.Pinned != nil {
		if err := s.d.Social.Settings.SetPinned(ctx, who.Tenant, who.UserID, conv, *req.Pinned); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, empty)
}

// readRequest is READ_MESSAGE's body (PROTOCOL cmd 8), in any of its forms.
type readRequest struct {
	Topic          string `json:"topic"`
	Seq            int64  `json:"seq"`
	ConversationID int64  `json:"conversation_id"`
	MsgID          int64  `json:"msg_id"`
	LastMsgID      int64  `json:"last_msg_id"`
	DeviceID       uint64 `json:"device_id"` // optional: this device gets no watermark push
}

type watermarkJSON struct {
	Topic          string `json:"topic"`
	ConversationID int64  `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	MsgID          int64  `json:"msg_id"`
}

func (s *Server) markRead(c echo.Context) error {
	var req readRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if s.d.Social.Reads == nil {
		return apperr.New(apperr.Busy, "read receipts are not available")
	}
	who := caller(c)
	w, err := s.d.Social.Reads.Read(c.Request().Context(), read.Request{
		Tenant: who.Tenant, User: who.UserID, Device: req.DeviceID,
		Topic: req.Topic, Seq: req.Seq, ConversationID: req.ConversationID, MsgID: req.MsgID, LastMsgID: req.LastMsgID,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, watermarkJSON{Topic: w.Topic, ConversationID: w.ConversationID, Seq: w.Seq, MsgID: w.MsgID})
}

// userMessages pages a topic as the caller sees it (membership checked, own deletions hidden).
func (s *Server) userMessages(c echo.Context) error {
	who := caller(c)
	return s.pageTopic(c, who.Tenant, who.UserID)
}

func (s *Server) userMessage(c echo.Context) error {
	name, seq, err := pathTopicSeq(c)
	if err != nil {
		return err
	}
	who := caller(c)
	m, err := s.d.History.Get(c.Request().Context(), who.Tenant, who.UserID, name, seq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.withReactions(c, who.UserID, who.Tenant, []message.Message{m})[0])
}

// sendRequest is SEND_MESSAGE's body (PROTOCOL §4) plus the optional sending device.
type sendRequest struct {
	wire.SendMessageRequest
	DeviceID uint64 `json:"device_id"` // optional: this device gets no copy
}

// sendUserMessage runs the same send path as SEND_MESSAGE: permission checks, seq, storage
// and the deliver queue, acknowledged only when stored and queued (DESIGN §4).
func (s *Server) sendUserMessage(c echo.Context) error {
	var req sendRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	who := caller(c)
	sr, err := protocol.SendRequest(req.SendMessageRequest, who.Tenant, who.UserID, req.DeviceID)
	if err != nil {
		return err
	}
	res, err := s.d.Social.Send.Send(c.Request().Context(), sr)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, protocol.SendAckOf(res))
}

type reportRequest struct {
	Topic  string `json:"topic"`
	Seq    int64  `json:"seq"`
	Reason string `json:"reason"`
}

type reportJSON struct {
	ReportID  int64  `json:"report_id"`
	Reporter  int64  `json:"reporter"`
	Topic     string `json:"topic"`
	Seq       int64  `json:"seq"`
	Reason    string `json:"reason"`
	Status    string `json:"status"`
	CreatedAt int64  `json:"created_at"` // Unix ms
	UpdatedAt int64  `json:"updated_at"` // Unix ms
	// Evidence is the reported message (admin listings only); null when it is gone.
	Evidence *wire.Message `json:"evidence,omitempty"`
}

// fileReport reports a message the caller can read.
func (s *Server) fileReport(c echo.Context) error {
	var req reportRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if _, err := topic.Parse(req.Topic); err != nil {
		return apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
	}
	if req.Seq <= 0 {
		return apperr.New(apperr.InvalidArgument, "seq must be a positive integer")
	}
	who := caller(c)
	r, err := s.d.Social.Reports.File(c.Request().Context(), who.Tenant, who.UserID, req.Topic, req.Seq, req.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, reportJSON{
		ReportID: r.ID, Reporter: r.Reporter, Topic: r.Topic, Seq: r.Seq, Reason: r.Reason, Status: string(r.Status),
		CreatedAt: unixMilli(r.CreatedAt), UpdatedAt: unixMilli(r.UpdatedAt),
	})
}
