package memory

import (
	"testing"

	"imd/ports"
	"imd/ports/contract"
)

func TestShardStoreContract(t *testing.T) {
	contract.ShardStore(t, func(*testing.T) (ports.ShardStore, string) {
		return NewShardStore(), "acme"
	})
}
