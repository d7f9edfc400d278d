package memory

import (
	"testing"
	"time"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestDeliverQueueContract(t *testing.T) { contract.DeliverQueue(t, deliverFixture) }

func TestDeliverDepthContract(t *testing.T) { contract.DeliverDepth(t, deliverFixture) }

func deliverFixture(*testing.T) contract.DeliverFixture {
	q := NewDeliverQueue(time.Now)
	return contract.DeliverFixture{Tenant: contractTenant, Queue: q, Split: func(n int) (ports.DeliverQueue, error) { return q.WithPartitions(n) }}
}

func TestDeliverInspectorContract(t *testing.T) {
	contract.DeliverInspector(t, func(*testing.T) contract.DeliverFixture {
		return contract.DeliverFixture{Tenant: contractTenant, Queue: NewDeliverQueue(time.Now)}
	})
}
