package redis

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestDialogRemoverContract(t *testing.T) {
	contract.DialogRemover(t, func(t *testing.T) (contract.RemovableDialogs, string) {
		c := testClient(t)
		return NewDialogStore(c), testTenant(t, c)
	})
}
