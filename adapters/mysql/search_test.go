package mysql

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestSearchContract(t *testing.T) {
	contract.Search(t, func(t *testing.T) contract.SearchFixture {
		c, tenant := newTestCluster(t)
		s := NewMessageStore(c, MessageStoreOptions{})
		t.Cleanup(func() { s.Close() })
		return contract.SearchFixture{Tenant: tenant, Store: s, Shards: NewShardStore(c), Search: s}
	})
}

func TestHiddenRangesContract(t *testing.T) {
	contract.HiddenRanges(t, func(t *testing.T) contract.HiddenFixture {
		c, tenant := newTestCluster(t)
		l := NewDeleteLog(c)
		return contract.HiddenFixture{Tenant: tenant, Log: l, Ranges: l}
	})
}
