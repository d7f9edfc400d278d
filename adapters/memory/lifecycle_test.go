package memory

import (
	"testing"
	"time"

	"github.com/imdhq/imd/ports/contract"
)

func TestRepairQueueContract(t *testing.T) {
	contract.RouteRepairQueue(t, func(*testing.T) contract.RepairQueueFixture {
		return contract.RepairQueueFixture{Tenant: contractTenant, Queue: NewRepairQueue()}
	})
}

func TestCompensationListContract(t *testing.T) {
	contract.CompensationList(t, func(*testing.T) contract.CompensationFixture {
		return contract.CompensationFixture{Tenant: contractTenant, List: NewCompensationList()}
	})
}

func TestLocksContract(t *testing.T) {
	contract.Locks(t, func(*testing.T) contract.LocksFixture {
		return contract.LocksFixture{Tenant: contractTenant, Locks: NewLocks(time.Now)}
	})
}

func newMirrorFixture(*testing.T) contract.MirrorFixture {
	shards := NewShardStore()
	return contract.MirrorFixture{
		Tenant: contractTenant, Store: NewMessageStore(shards), Shards: shards,
		Mirror: NewRouteMirror(shards), Housekeeping: NewHousekeeping(shards),
	}
}

func TestRouteMirrorContract(t *testing.T) { contract.RouteMirror(t, newMirrorFixture) }

func TestShardHousekeepingContract(t *testing.T) { contract.ShardHousekeeping(t, newMirrorFixture) }
