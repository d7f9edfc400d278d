package memory

import (
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/ports/contract"
)

func TestLegacyContract(t *testing.T) {
	contract.Legacy(t, func(*testing.T) contract.LegacyFixture {
		shards := NewShardStore()
		l := NewLegacy(shards, time.Now)
		return contract.LegacyFixture{
			Tenant: "acme", Store: NewMessageStore(shards), Shards: shards, DeleteLog: NewDeleteLog(shards),
			Legacy: l, Jobs: l,
			Load: func(_ *testing.T, rows []message.Message) { l.Load("acme", rows) },
		}
	})
}
