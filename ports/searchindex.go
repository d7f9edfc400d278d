package ports

import (
	"context"

	"github.com/imdhq/imd/core/domain/fulltext"
	"github.com/imdhq/imd/core/domain/month"
)

// SearchIndex is the long-term search index of seed 000 §6.6, one per tenant. It answers
// topic+seq only; the server reads the messages and re-checks rights before returning them.
type SearchIndex interface {
	// Index adds documents, replacing any with the same topic+seq.
	Index(ctx context.Context, tenant string, docs []fulltext.Doc) error
	// Remove deletes documents; absent ones are no error.
	Remove(ctx context.Context, tenant string, keys []fulltext.Key) error
	// RemoveMonth deletes every document of month m (retention purge) and returns how many.
	RemoveMonth(ctx context.Context, tenant string, m month.Month) (int, error)
	// Search returns up to q.Limit hits after q.Offset, newest first (created_at, then seq).
	Search(ctx context.Context, tenant string, q fulltext.Query) ([]fulltext.Hit, error)
}
