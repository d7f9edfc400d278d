package memory

import (
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestSearchIndexContract(t *testing.T) {
	contract.SearchIndex(t, func(*testing.T) ports.SearchIndex { return NewSearchIndex() })
}
