package memory

import (
	"testing"

	"imd/ports"
	"imd/ports/contract"
)

func TestDirectoryContract(t *testing.T) {
	contract.Directory(t, func(*testing.T) (ports.Directory, string) {
		return NewDirectory(), "acme"
	})
}
