package redis

import (
	"testing"

	"imd/ports"
	"imd/ports/contract"
)

func TestRevocationsContract(t *testing.T) {
	contract.Revocations(t, func(t *testing.T) (ports.TokenRevocations, string) {
		c := testClient(t)
		return NewRevocations(c), testTenant(t, c)
	})
}
