package memory

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestReadStoreContract(t *testing.T) {
	contract.ReadStore(t, func(*testing.T) contract.ReadFixture {
		dir, shards := NewDirectory(), NewShardStore()
		store, reads, settings := NewMessageStore(shards), NewReadStore(dir, shards), NewPresence()
		return contract.ReadFixture{
			Tenant: contractTenant, Reads: reads, Finder: store,
			Directory: dir, Store: store, Shards: shards,
			Receipts: NewReceipts(dir, reads, settings), Settings: settings,
		}
	})
}

func TestMailboxContract(t *testing.T) {
	contract.Mailbox(t, func(*testing.T) contract.MailboxFixture {
		return contract.MailboxFixture{Tenant: contractTenant, Mailbox: NewMailbox()}
	})
}
