package dualread

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// Search is a ports.MessageSearch that also searches the legacy rows of each month.
type Search struct {
	inner ports.MessageSearch
	src   *Source
}

var _ ports.MessageSearch = (*Search)(nil)

// NewSearch decorates inner.
func NewSearch(inner ports.MessageSearch, src *Source) *Search {
	return &Search{inner: inner, src: src}
}

// Search merges the month's legacy rows not copied yet into the month table's hits, newest
// first, the legacy rows read first for the reason Store.Page gives.
func (s *Search) Search(ctx context.Context, tenant string, m month.Month, q ports.SearchQuery) ([]message.Message, error) {
	on, err := s.src.active(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if !on {
		return s.inner.Search(ctx, tenant, m, q)
	}
	old, err := s.src.legacy.Search(ctx, tenant, m, q)
	if err != nil && !s.src.gone(ctx, tenant, err) {
		return nil, fmt.Errorf("legacy search of %s: %w", m, err)
	}
	cur, err := s.inner.Search(ctx, tenant, m, q)
	if err != nil && !(len(old) > 0 && errors.Is(err, shard.ErrMonthMissing)) {
		return nil, err
	}
	if len(old) == 0 {
		return cur, nil
	}
	out := union(cur, old)
	slices.SortFunc(out, message.NewestFirst)
	return out[:min(len(out), max(q.Limit, 0))], nil
}
