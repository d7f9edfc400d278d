package memory

import (
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestDirectoryContract(t *testing.T) {
	contract.Directory(t, func(*testing.T) (ports.Directory, string) {
		return NewDirectory(), "acme"
	})
}
