package memory

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestSocialContract(t *testing.T) {
	contract.Social(t, func(*testing.T) (contract.SocialGraph, string) {
		return NewDirectory(), "acme"
	})
}
