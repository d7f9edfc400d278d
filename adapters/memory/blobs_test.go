package memory

import (
	"testing"

	"imd/ports"
	"imd/ports/contract"
)

func TestBlobStoreContract(t *testing.T) {
	contract.BlobStore(t, func(*testing.T) ports.BlobStore { return NewBlobStore() })
}
