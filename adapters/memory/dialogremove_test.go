package memory

import (
	"testing"
	"time"

	"imd/ports/contract"
)

func TestDialogRemoverContract(t *testing.T) {
	contract.DialogRemover(t, func(*testing.T) (contract.RemovableDialogs, string) {
		return NewDialogStore(time.Now), contractTenant
	})
}
