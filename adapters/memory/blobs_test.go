package memory

import (
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestBlobStoreContract(t *testing.T) {
	contract.BlobStore(t, func(*testing.T) ports.BlobStore { return NewBlobStore() })
}

func TestObjectStoreContract(t *testing.T) {
	contract.ObjectStore(t, NewObjectStore(), "acme/7/20300101/0123456789abcdef0123456789abcdef.png.thumb.jpg")
}
