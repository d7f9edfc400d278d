package memory

import (
	"testing"
	"time"

	"github.com/imdhq/imd/ports/contract"
)

func TestMonthStateContract(t *testing.T) {
	contract.MonthState(t, func(*testing.T) contract.MonthFixture {
		return contract.MonthFixture{Tenant: contractTenant, Months: NewMonthState(time.Now)}
	})
}
