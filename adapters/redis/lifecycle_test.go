package redis

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports/contract"
)

func TestRepairQueueContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.RouteRepairQueue(t, func(t *testing.T) contract.RepairQueueFixture {
			return contract.RepairQueueFixture{Tenant: testTenant(t, c), Queue: NewRepairQueue(c)}
		})
	})
}

func TestCompensationListContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.CompensationList(t, func(t *testing.T) contract.CompensationFixture {
			return contract.CompensationFixture{Tenant: testTenant(t, c), List: NewCompensationList(c)}
		})
	})
}

func TestLocksContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.Locks(t, func(t *testing.T) contract.LocksFixture {
			return contract.LocksFixture{Tenant: testTenant(t, c), Locks: NewLocks(c)}
		})
	})
}
