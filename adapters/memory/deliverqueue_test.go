package memory

import (
	"testing"
	"time"

	"imd/ports/contract"
)

func TestDeliverQueueContract(t *testing.T) {
	contract.DeliverQueue(t, func(*testing.T) contract.DeliverFixture {
		return contract.DeliverFixture{Tenant: contractTenant, Queue: NewDeliverQueue(time.Now)}
	})
}
