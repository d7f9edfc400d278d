package memory

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestRouteCacheContract(t *testing.T) {
	contract.RouteCache(t, func(*testing.T) contract.RouteFixture {
		return contract.RouteFixture{Tenant: contractTenant, Routes: NewRouteCache()}
	})
}
