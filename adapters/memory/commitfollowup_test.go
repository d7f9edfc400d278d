package memory

import (
	"testing"
	"time"

	"github.com/imdhq/imd/ports/contract"
)

func TestCommitFollowUpContract(t *testing.T) {
	contract.CommitFollowUp(t, func(t *testing.T, partitions int) contract.FollowUpFixture {
		months := NewGroupedMonthState(time.Now, 4)
		seqs := NewSeqAllocator(months, time.Now)
		routes := NewRouteCache()
		hot := NewHotCache(time.Now, time.Hour, 100)
		queue, err := NewDeliverQueue(time.Now).WithPartitions(partitions)
		if err != nil {
			t.Fatal(err)
		}
		return contract.FollowUpFixture{
			Tenant:   contractTenant,
			FollowUp: &CommitFollowUp{Routes: routes, Hot: hot, Queue: queue, Seqs: seqs, Pending: seqs},
			Routes:   routes, Hot: hot, Queue: queue, Seq: seqs, Pending: seqs, Months: months,
		}
	})
}
