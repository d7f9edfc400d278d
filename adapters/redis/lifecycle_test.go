package redis

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestRepairQueueContract(t *testing.T) {
	contract.RouteRepairQueue(t, func(t *testing.T) contract.RepairQueueFixture {
		c := testClient(t)
		return contract.RepairQueueFixture{Tenant: testTenant(t, c), Queue: NewRepairQueue(c)}
	})
}

func TestCompensationListContract(t *testing.T) {
	contract.CompensationList(t, func(t *testing.T) contract.CompensationFixture {
		c := testClient(t)
		return contract.CompensationFixture{Tenant: testTenant(t, c), List: NewCompensationList(c)}
	})
}

func TestLocksContract(t *testing.T) {
	contract.Locks(t, func(t *testing.T) contract.LocksFixture {
		c := testClient(t)
		return contract.LocksFixture{Tenant: testTenant(t, c), Locks: NewLocks(c)}
	})
}
