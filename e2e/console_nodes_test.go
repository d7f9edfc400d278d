package e2e

import (
	"context"
	"testing"
	"time"
)

// nodesRows is the console's node table as [instance, node_id, lease ends, lease left,
// devices, push backlog, partitions] rows.
const nodesRows = `[...document.querySelectorAll('#nodes-table tbody tr')].map((r) => [...r.cells].map((c) => c.textContent))`

// The console's "Nodes and presence" page lists every live node of the tenant with the
// deliver partitions it consumes and the devices it holds, and drops a node that stopped
// (issue 17 over issue 14).
func TestConsoleNodesPageShowsEachNodeWithItsPartitionsAndDevices(t *testing.T) {
	nodes := startNodes(t, 2, map[string]string{"IMD_DELIVER_PARTITIONS": "4"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := nodes[1].Connect(ctx, nodes[0].User(8001), 1)
	defer conn.Close()

	b := signedInConsole(t, nodes[0])

	b.open("delivery", "#nodes-table tbody")
	// Node 2 joined after node 1, so the partitions are split once the keepers settle.
	b.waitFor("both nodes, each with partitions, node 2 holding the device", `(() => { const rows = `+nodesRows+`;
		return rows.length === 2 && rows.every((r) => r[6] !== 'none') &&
			rows.some((r) => r[1] === '1' && r[4] === '0') && rows.some((r) => r[1] === '2' && r[4] === '1'); })()`, 90*time.Second)
	b.waitText("#nodes-unheld", "Partitions no live node holds: none", 30*time.Second)
	b.shot("nodes-two")

	// A graceful stop retires node 2 at once; node 1 takes every partition over.
	nodes[1].Stop()
	b.waitFor("node 1 alone with all four partitions", `(() => { const rows = `+nodesRows+`;
		return rows.length === 1 && rows[0][1] === '1' && rows[0][6] === '0, 1, 2, 3'; })()`, 90*time.Second)
	b.shot("nodes-one")
}
