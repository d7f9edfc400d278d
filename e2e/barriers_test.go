package e2e

import (
	"net/http"
	"testing"
	"time"
)

// The checks that nothing more arrives (no second push, no second notification) wait for the
// event after which only a new send could cause one, read from the admin API and the metrics
// as an operator would, instead of sleeping for a while.

// deliveryDrained waits until the tenant's deliver queue has no job waiting or taken: every
// job queued so far was acted on and acknowledged, also those a dead node had taken, which
// come back once its lease runs out. A job is acknowledged after its pushes were handed to the
// connections or to the other nodes' channels.
func deliveryDrained(t *testing.T, srv *Server, limit time.Duration) {
	t.Helper()
	eventually(t, limit, "the deliver queue drained", func() bool {
		var d struct {
			Partitions []struct {
				Queued     int64 `json:"queued"`
				Processing int64 `json:"processing"`
			} `json:"partitions"`
		}
		if srv.Admin("GET", "/delivery", nil, &d) != http.StatusOK {
			return false
		}
		for _, p := range d.Partitions {
			if p.Queued > 0 || p.Processing > 0 {
				return false
			}
		}
		return true
	})
}

// handOffsDone waits, for a tenant whose nodes are all alive and all given, until the deliver
// queue drained, every node read what the others handed to its channel (a refused push there
// becomes a notification), and every node's webhook posted the notifications it was handed.
func handOffsDone(t *testing.T, limit time.Duration, nodes ...*Server) {
	t.Helper()
	deliveryDrained(t, nodes[0], limit)
	eventually(t, limit, "every node read its push channel", func() bool {
		var live struct {
			Nodes []struct {
				PushBacklog int64 `json:"push_backlog"`
			} `json:"nodes"`
		}
		if nodes[0].Admin("GET", "/nodes", nil, &live) != http.StatusOK || len(live.Nodes) != len(nodes) {
			return false
		}
		for _, n := range live.Nodes {
			if n.PushBacklog > 0 {
				return false
			}
		}
		return true
	})
	eventually(t, limit, "every webhook posted what it was handed", func() bool {
		for _, n := range nodes {
			posted := n.metricValue("push_notify_total", "status", "ok") + n.metricValue("push_notify_total", "status", "failed")
			if posted < n.metricValue("deliver_notify_total", "status", "ok") {
				return false
			}
		}
		return true
	})
}
