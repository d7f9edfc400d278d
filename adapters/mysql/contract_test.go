package mysql

import (
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestMessageStoreContract(t *testing.T) {
	contract.MessageStore(t, func(t *testing.T) (ports.MessageStore, ports.ShardStore, string) {
		c, tenant := newTestCluster(t)
		s := NewMessageStore(c, MessageStoreOptions{})
		t.Cleanup(func() { s.Close() })
		return s, NewShardStore(c), tenant
	})
}

func TestShardStoreContract(t *testing.T) {
	contract.ShardStore(t, func(t *testing.T) (ports.ShardStore, string) {
		c, tenant := newTestCluster(t)
		return NewShardStore(c), tenant
	})
}

func TestDirectoryContract(t *testing.T) {
	contract.Directory(t, func(t *testing.T) (ports.Directory, string) {
		c, tenant := newTestCluster(t)
		return NewDirectory(c), tenant
	})
}

func TestSeqHolesContract(t *testing.T) {
	contract.SeqHoles(t, func(t *testing.T) (contract.SeqHolesStore, ports.ShardStore, string) {
		c, tenant := newTestCluster(t)
		s := NewMessageStore(c, MessageStoreOptions{})
		t.Cleanup(func() { s.Close() })
		return s, NewShardStore(c), tenant
	})
}
