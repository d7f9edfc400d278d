package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/ports"
)

// Dead-letter requeue bounds: one call moves at most this many, so it never holds Redis long.
const (
	defaultRequeueDead = 100
	maxRequeueDead     = 10000
)

// deliveryRoutes show the deliver queue of seed 003 §12 and put its dead letters back.
func (s *Server) deliveryRoutes(t *echo.Group) {
	t.GET("/delivery", s.deliveryDepths)
	t.POST("/delivery/dead/requeue", s.requeueDead)
}

func (s *Server) deliverInspector() (ports.DeliverInspector, error) {
	if s.d.Delivery == nil {
		return nil, apperr.New(apperr.Busy, "delivery inspection unavailable")
	}
	return s.d.Delivery, nil
}

type partitionDepthJSON struct {
	Partition      int   `json:"partition"`
	Queued         int64 `json:"queued"`
	Processing     int64 `json:"processing"`
	OldestQueuedAt int64 `json:"oldest_queued_at"` // Unix ms of the next job, 0 when empty
	LagMS          int64 `json:"lag_ms"`           // how long the next job has waited
}

type deliveryJSON struct {
	Partitions []partitionDepthJSON `json:"partitions"`
	Dead       int64                `json:"dead"`
}

func (s *Server) deliveryDepths(c echo.Context) error {
	in, err := s.deliverInspector()
	if err != nil {
		return err
	}
	d, err := in.Depth(c.Request().Context(), c.Param("tenant"))
	if err != nil {
		return apperr.Wrap(apperr.Busy, "reading the deliver queue failed", err)
	}
	now := time.Now().UnixMilli()
	out := deliveryJSON{Dead: d.Dead, Partitions: make([]partitionDepthJSON, len(d.Partitions))}
	for i, p := range d.Partitions {
		out.Partitions[i] = partitionDepthJSON{Partition: i, Queued: p.Queued, Processing: p.Processing,
			OldestQueuedAt: p.OldestQueuedAt}
		if p.OldestQueuedAt > 0 {
			out.Partitions[i].LagMS = max(now-p.OldestQueuedAt, 0)
		}
	}
	return c.JSON(http.StatusOK, out)
}

type requeueRequest struct {
	Max *int `json:"max,omitempty"` // default 100
}

type requeuedJSON struct {
	Requeued int `json:"requeued"`
}

// requeueDead moves the oldest dead letters (up to {"max": n}, default 100) back to their
// partitions with their attempts reset.
func (s *Server) requeueDead(c echo.Context) error {
	in, err := s.deliverInspector()
	if err != nil {
		return err
	}
	var body requeueRequest
	if c.Request().ContentLength != 0 {
		if err := decodeJSON(c, &body); err != nil {
			return err
		}
	}
	n := defaultRequeueDead
	if body.Max != nil {
		n = *body.Max
	}
	if n < 1 || n > maxRequeueDead {
		return apperr.New(apperr.InvalidArgument, "max must be 1-10000")
	}
	moved, err := in.RequeueDead(c.Request().Context(), c.Param("tenant"), n)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "requeueing dead letters failed", err)
	}
	return c.JSON(http.StatusOK, requeuedJSON{Requeued: moved})
}
