package memory

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestReferencesContract(t *testing.T) {
	contract.References(t, func(*testing.T) contract.ReferencesFixture {
		r := NewReferences()
		return contract.ReferencesFixture{Tenant: "acme", Favorites: r, Files: r, Refs: r, Media: r}
	})
}

func TestMonthRowsContract(t *testing.T) {
	contract.MonthRows(t, func(*testing.T) contract.MonthRowsFixture {
		shards := NewShardStore()
		return contract.MonthRowsFixture{Tenant: "acme", Rows: NewMonthRows(shards), Shards: shards}
	})
}
