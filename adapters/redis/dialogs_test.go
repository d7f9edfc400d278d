package redis

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports/contract"
)

func TestDialogStoreContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.DialogStore(t, func(t *testing.T) contract.DialogFixture {
			return contract.DialogFixture{Tenant: testTenant(t, c), Dialogs: NewDialogStore(c)}
		})
	})
}
