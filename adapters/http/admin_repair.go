package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
)

// Route repair listing bounds.
const (
	defaultRepairTopics = 50
	maxRepairTopics     = 1000
)

// repairRoutes show the route repair backlog of seed 000 §3.4 and work it off now.
func (s *Server) repairRoutes(t *echo.Group) {
	t.GET("/routes/repair", s.repairBacklog)
	t.POST("/routes/repair/drain", s.drainRepairs)
}

type repairBacklogJSON struct {
	Queued    int64    `json:"queued"`
	InProcess int      `json:"in_process"`
	Topics    []string `json:"topics"`
}

func (s *Server) repairBacklog(c echo.Context) error {
	limit, err := queryLimitOr(c, defaultRepairTopics, maxRepairTopics)
	if err != nil {
		return err
	}
	b, err := s.d.Shards.Repair.Backlog(c.Request().Context(), c.Param("tenant"), limit)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "reading the route repair backlog failed", err)
	}
	return c.JSON(http.StatusOK, repairBacklogJSON{Queued: b.Queued, InProcess: b.InProcess, Topics: append([]string{}, b.Topics...)})
}

type repairedJSON struct {
	Repaired int `json:"repaired"`
}

// drainRepairs runs one repair pass now, as the background worker would on its next tick.
func (s *Server) drainRepairs(c echo.Context) error {
	n, err := s.d.Shards.Repair.Drain(c.Request().Context(), c.Param("tenant"))
	if err != nil {
		return apperr.Wrap(apperr.Busy, "route repair pass failed", err)
	}
	return c.JSON(http.StatusOK, repairedJSON{Repaired: n})
}
