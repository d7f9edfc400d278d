package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/ports"
)

// NodeOps serve the node listing of admin_nodes.go (DESIGN §11); a nil Inspect answers 50301.
type NodeOps struct {
	Inspect ports.NodeInspector
	Holders ports.DeliverLeaseHolders
}

func (s *Server) nodeRoutes(t *echo.Group) {
	t.GET("/nodes", s.listNodes)
}

type nodeJSON struct {
	Name        string `json:"name"`
	NodeID      string `json:"node_id"`
	LeaseUntil  int64  `json:"lease_until"` // Unix ms
	LeaseLeftMS int64  `json:"lease_left_ms"`
	Devices     int64  `json:"devices"`
	PushBacklog int64  `json:"push_backlog"`
	Partitions  []int  `json:"partitions"`
}

type nodesJSON struct {
	Nodes []nodeJSON `json:"nodes"`
	// Unheld are the deliver partitions no live instance consumes right now.
	Unheld []int `json:"unheld_partitions"`
}

// listNodes shows the tenant's live node instances, the deliver partitions each consumes and
// the devices each holds.
func (s *Server) listNodes(c echo.Context) error {
	n := s.d.Nodes
	if n.Inspect == nil || n.Holders == nil {
		return apperr.New(apperr.Busy, "node listing unavailable")
	}
	ctx, tenant := c.Request().Context(), c.Param("tenant")
	live, err := n.Inspect.LiveNodes(ctx, tenant)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "reading the node leases failed", err)
	}
	holders, err := n.Holders.Holders(ctx, tenant)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "reading the deliver leases failed", err)
	}
	now := time.Now()
	out := nodesJSON{Nodes: make([]nodeJSON, len(live)), Unheld: []int{}}
	index := make(map[string]int, len(live))
	for i, st := range live {
		index[st.Node] = i
		out.Nodes[i] = nodeJSON{Name: st.Node, NodeID: presence.NodeID(st.Node), LeaseUntil: st.LeaseUntil.UnixMilli(),
			LeaseLeftMS: max(st.LeaseUntil.Sub(now).Milliseconds(), 0), Devices: st.Devices, PushBacklog: st.Backlog, Partitions: []int{}}
	}
	for p, holder := range holders {
		if i, ok := index[holder]; ok {
			out.Nodes[i].Partitions = append(out.Nodes[i].Partitions, p)
		} else {
			out.Unheld = append(out.Unheld, p)
		}
	}
	return c.JSON(http.StatusOK, out)
}
