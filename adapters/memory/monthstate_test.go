package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/imdhq/imd/ports/contract"
)

// contractGroups are the slot group counts the fakes pass the contracts with: one, as most
// tests use them, and several, as the Redis adapter keeps and the simulator uses.
var contractGroups = []int{1, 4}

func TestMonthStateContract(t *testing.T) {
	for _, groups := range contractGroups {
		t.Run(fmt.Sprintf("%d groups", groups), func(t *testing.T) {
			contract.MonthState(t, func(*testing.T) contract.MonthFixture {
				return contract.MonthFixture{Tenant: contractTenant, Months: NewGroupedMonthState(time.Now, groups)}
			})
		})
	}
}
