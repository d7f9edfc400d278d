package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/loop/shardmanager"
)

// ShardOps are the shard lifecycle use cases behind the routes of this file (seed 000 §3.4,
// §5.3, §10).
type ShardOps struct {
	Manager *shardmanager.Manager
	Repair  *routerepair.Service
}

// Compensation listing bounds.
const (
	defaultCompensationLimit = 100
	maxCompensationLimit     = 1000
)

func (s *Server) shardRoutes(t *echo.Group) {
	t.POST("/routes/rebuild", s.rebuildTenantRoutes)
	t.POST("/shards/:month/archive", s.archiveMonth)
	t.GET("/compensation", s.listCompensation)
}

type routesRebuiltJSON struct {
	Topics int `json:"topics"`
}

// rebuildTenantRoutes rewrites every topic's Redis route from the MySQL mirror.
func (s *Server) rebuildTenantRoutes(c echo.Context) error {
	n, err := s.d.Shards.Repair.RebuildAll(c.Request().Context(), c.Param("tenant"))
	if err != nil {
		return apperr.Wrap(apperr.Busy, "rebuilding routes failed", err)
	}
	return c.JSON(http.StatusOK, routesRebuiltJSON{Topics: n})
}

// archiveMonth archives a sealed month: with an archiver, its rows go to the blob store first
// (admin_archive.go); without one, the month is marked archived as a state only.
func (s *Server) archiveMonth(c echo.Context) error {
	m, err := month.Parse(c.Param("month"))
	if err != nil {
		return apperr.New(apperr.InvalidArgument, "month must be YYYYMM")
	}
	if s.d.Archive.Archiver != nil && s.d.Archive.Jobs != nil {
		return s.archiveMonthJob(c, m)
	}
	if err := s.d.Shards.Manager.Archive(c.Request().Context(), c.Param("tenant"), m); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, archivedMonthJSON{ShardMonth: m.String(), Status: "archived"})
}

type compensationEntry struct {
	ShardMonth string       `json:"shard_month"`
	Reason     string       `json:"reason"`
	At         int64        `json:"at"` // Unix ms the write was first refused
	Message    wire.Message `json:"message"`
}

type compensationResponse struct {
	Total   int64               `json:"total"`
	Entries []compensationEntry `json:"entries"`
}

// listCompensation lists the oldest late writes refused by sealed months.
func (s *Server) listCompensation(c echo.Context) error {
	limit, err := queryLimitOr(c, defaultCompensationLimit, maxCompensationLimit)
	if err != nil {
		return err
	}
	entries, total, err := s.d.Shards.Manager.Compensation(c.Request().Context(), c.Param("tenant"), limit)
	if err != nil {
		return err
	}
	out := compensationResponse{Total: total, Entries: make([]compensationEntry, len(entries))}
	for i, e := range entries {
		out.Entries[i] = compensationEntry{
			ShardMonth: e.Message.Month.String(), Reason: e.Reason, At: unixMilli(e.At),
			Message: protocol.FromMessage(e.Message),
		}
	}
	return c.JSON(http.StatusOK, out)
}
