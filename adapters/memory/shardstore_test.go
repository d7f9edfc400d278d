package memory

import (
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestShardStoreContract(t *testing.T) {
	contract.ShardStore(t, func(*testing.T) (ports.ShardStore, string) {
		return NewShardStore(), "acme"
	})
}
