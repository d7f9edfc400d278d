package redis

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestDialogStoreContract(t *testing.T) {
	contract.DialogStore(t, func(t *testing.T) contract.DialogFixture {
		c := testClient(t)
		return contract.DialogFixture{Tenant: testTenant(t, c), Dialogs: NewDialogStore(c)}
	})
}
