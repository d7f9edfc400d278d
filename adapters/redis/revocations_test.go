package redis

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestRevocationCacheContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.RevocationCache(t, func(t *testing.T) (ports.RevocationCache, string) {
			return NewRevocationCache(c), testTenant(t, c)
		})
	})
}
