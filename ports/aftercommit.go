package ports

import (
	"context"

	"github.com/imdhq/imd/core/domain/message"
)

// CommitListener hears of every message the send path stored and acknowledged, after COMMIT
// (seed 000 §6.6: the search index is fed after the write). It must return quickly and its
// failures are its own: a send never fails or waits because of a listener.
type CommitListener interface {
	Committed(ctx context.Context, tenant string, m message.Message)
}
