package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/usecase/nativepush"
)

// pushRoutes show native push's dead letters (docs/DESIGN.md issue-32 part 1) to operators:
// the admin API and the console's Push page.
func (s *Server) pushRoutes(t *echo.Group) {
	t.GET("/push/dead_letters", s.pushDeadLetters)
}

type pushDeadLetterJSON struct {
	Provider  string `json:"provider"`
	UserID    int64  `json:"user_id"`
	DeviceID  string `json:"device_id"`
	MsgID     int64  `json:"msg_id"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
	At        int64  `json:"at"`
}

type pushDeadLettersJSON struct {
	DeadLetters []pushDeadLetterJSON `json:"dead_letters"`
}

// pushDeadLetters answers ?provider=apns|fcm&limit= (default and most:
// nativepush.MaxDeadLetters), newest first.
func (s *Server) pushDeadLetters(c echo.Context) error {
	if s.d.PushTokens == nil {
		return apperr.New(apperr.Busy, "native push not served here")
	}
	limit, err := queryLimitOr(c, nativepush.MaxDeadLetters, nativepush.MaxDeadLetters)
	if err != nil {
		return err
	}
	ds, err := s.d.PushTokens.DeadLetters(c.Request().Context(), c.Param("tenant"), c.QueryParam("provider"), limit)
	if err != nil {
		return err
	}
	out := pushDeadLettersJSON{DeadLetters: make([]pushDeadLetterJSON, len(ds))}
	for i, d := range ds {
		out.DeadLetters[i] = pushDeadLetterJSON{Provider: string(d.Provider), UserID: d.User, DeviceID: d.DeviceID, MsgID: d.MsgID,
			Attempts: d.Attempts, LastError: d.LastError, At: unixMilli(d.CreatedAt)}
	}
	return c.JSON(http.StatusOK, out)
}
