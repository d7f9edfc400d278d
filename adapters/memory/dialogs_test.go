package memory

import (
	"testing"
	"time"

	"github.com/imdhq/imd/ports/contract"
)

func TestDialogStoreContract(t *testing.T) {
	contract.DialogStore(t, func(*testing.T) contract.DialogFixture {
		return contract.DialogFixture{Tenant: contractTenant, Dialogs: NewDialogStore(time.Now)}
	})
}

func TestListGapsContract(t *testing.T) {
	contract.ListGaps(t, func(*testing.T) contract.ListGapsFixture {
		return contract.ListGapsFixture{Tenant: contractTenant, Gaps: NewDialogStore(time.Now)}
	})
}
