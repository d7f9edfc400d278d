package memory

import (
	"testing"

	"imd/ports/contract"
)

func TestSocialContract(t *testing.T) {
	contract.Social(t, func(*testing.T) (contract.SocialGraph, string) {
		return NewDirectory(), "acme"
	})
}
