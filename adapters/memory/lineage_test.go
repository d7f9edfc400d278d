package memory

import (
	"testing"

	"github.com/imdhq/imd/ports/contract"
)

func TestRedisLineageContract(t *testing.T) {
	contract.RedisLineage(t, func(*testing.T) contract.LineageFixture {
		l := NewRedisLineage()
		return contract.LineageFixture{Lineage: l, Replace: func(*testing.T) { l.Replace() }}
	})
}
