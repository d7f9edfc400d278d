package redis

import (
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestRevocationCacheContract(t *testing.T) {
	contract.RevocationCache(t, func(t *testing.T) (ports.RevocationCache, string) {
		c := testClient(t)
		return NewRevocationCache(c), testTenant(t, c)
	})
}
