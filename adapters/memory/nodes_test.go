package memory

import (
	"testing"
	"time"

	"github.com/imdhq/imd/ports/contract"
)

func TestNodesContract(t *testing.T) {
	contract.Nodes(t, func(t *testing.T) contract.NodesFixture {
		n := NewNodes(time.Now)
		q, err := NewDeliverQueue(time.Now).WithPartitions(2)
		if err != nil {
			t.Fatal(err)
		}
		return contract.NodesFixture{Tenant: contractTenant, Leases: n, Presence: n, Channel: n, Queue: q, Deliver: q, Inspect: n, Holders: q}
	})
}
