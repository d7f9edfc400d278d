package memory

import (
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestMessageStoreContract(t *testing.T) {
	contract.MessageStore(t, func(*testing.T) (ports.MessageStore, ports.ShardStore, string) {
		shards := NewShardStore()
		return NewMessageStore(shards), shards, "acme"
	})
}

func TestSeqHolesContract(t *testing.T) {
	contract.SeqHoles(t, func(*testing.T) (contract.SeqHolesStore, ports.ShardStore, string) {
		shards := NewShardStore()
		return NewMessageStore(shards), shards, "acme"
	})
}
