package memory

import (
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestBlobStoreContract(t *testing.T) {
	contract.BlobStore(t, func(*testing.T) ports.BlobStore { return NewBlobStore() })
}
