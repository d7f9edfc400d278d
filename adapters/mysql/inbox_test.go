package mysql

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestReadStoreContract(t *testing.T) {
	contract.ReadStore(t, func(t *testing.T) contract.ReadFixture {
		c, tenant := newTestCluster(t)
		store := NewMessageStore(c, MessageStoreOptions{})
		t.Cleanup(func() { store.Close() })
		return contract.ReadFixture{
			Tenant: tenant, Reads: NewReadStore(c), Finder: store,
			Directory: NewDirectory(c), Store: store, Shards: NewShardStore(c),
			Receipts: NewReceipts(c, store), Settings: NewPresence(c),
		}
	})
}

func TestMailboxContract(t *testing.T) {
	contract.Mailbox(t, func(t *testing.T) contract.MailboxFixture {
		c, tenant := newTestCluster(t)
		return contract.MailboxFixture{Tenant: tenant, Mailbox: NewMailbox(c)}
	})
}
