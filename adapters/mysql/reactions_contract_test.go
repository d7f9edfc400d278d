package mysql

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestReactionsContract(t *testing.T) {
	contract.Reactions(t, func(t *testing.T) contract.ReactionsFixture {
		c, tenant := newTestCluster(t)
		r := NewReactions(c)
		return contract.ReactionsFixture{Tenant: tenant, Reactions: r, Pins: r}
	})
}
