package redis

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports/contract"
)

func TestDialogRemoverContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.DialogRemover(t, func(t *testing.T) (contract.RemovableDialogs, string) {
			return NewDialogStore(c), testTenant(t, c)
		})
	})
}
