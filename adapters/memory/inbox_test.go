package memory

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestReadStoreContract(t *testing.T) {
	contract.ReadStore(t, func(*testing.T) contract.ReadFixture {
		dir, shards := NewDirectory(), NewShardStore()
		store := NewMessageStore(shards)
		return contract.ReadFixture{
			Tenant: contractTenant, Reads: NewReadStore(dir, shards), Finder: store,
			Directory: dir, Store: store, Shards: shards,
		}
	})
}

func TestMailboxContract(t *testing.T) {
	contract.Mailbox(t, func(*testing.T) contract.MailboxFixture {
		return contract.MailboxFixture{Tenant: contractTenant, Mailbox: NewMailbox()}
	})
}
