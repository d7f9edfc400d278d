package memory

import (
	"testing"
	"time"

	"github.com/imdhq/imd/ports/contract"
)

func TestDialogRemoverContract(t *testing.T) {
	contract.DialogRemover(t, func(*testing.T) (contract.RemovableDialogs, string) {
		return NewDialogStore(time.Now), contractTenant
	})
}
