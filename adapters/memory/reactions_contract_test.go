package memory

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestReactionsContract(t *testing.T) {
	contract.Reactions(t, func(*testing.T) contract.ReactionsFixture {
		r := NewReactions()
		return contract.ReactionsFixture{Tenant: "acme", Reactions: r, Pins: r}
	})
}
