package mysql

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestSocialContract(t *testing.T) {
	contract.Social(t, func(t *testing.T) (contract.SocialGraph, string) {
		c, tenant := newTestCluster(t)
		return NewDirectory(c), tenant
	})
}
