package mysql

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestReferencesContract(t *testing.T) {
	contract.References(t, func(t *testing.T) contract.ReferencesFixture {
		c, tenant := newTestCluster(t)
		r := NewReferences(c)
		return contract.ReferencesFixture{Tenant: tenant, Favorites: r, Files: r, Refs: r, Media: r}
	})
}

func TestMonthRowsContract(t *testing.T) {
	contract.MonthRows(t, func(t *testing.T) contract.MonthRowsFixture {
		c, tenant := newTestCluster(t)
		return contract.MonthRowsFixture{Tenant: tenant, Rows: NewMonthRows(c), Shards: NewShardStore(c)}
	})
}
