package memory

import (
	"testing"

	"imd/ports"
	"imd/ports/contract"
)

func TestSearchIndexContract(t *testing.T) {
	contract.SearchIndex(t, func(*testing.T) ports.SearchIndex { return NewSearchIndex() })
}
