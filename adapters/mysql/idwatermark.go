package mysql

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

var _ ports.IDWatermark = (*ShardStore)(nil)

// MaxMessageID returns the largest message_id of the newest month table holding rows: ids grow
// with time, so older months cannot hold a larger one. One primary-key lookup per table read.
func (s *ShardStore) MaxMessageID(ctx context.Context, tenant string) (int64, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return 0, err
	}
	rows, err := t.q.Catalog(ctx)
	if err != nil {
		return 0, fmt.Errorf("read catalog: %w", err)
	}
	for i := len(rows) - 1; i >= 0; i-- {
		m, err := month.Parse(rows[i].ShardMonth)
		if err != nil {
			return 0, fmt.Errorf("catalog row: %w", err)
		}
		table, err := m.Table()
		if err != nil {
			return 0, err
		}
		var id int64
		// table derives from a validated catalog month, never from input.
		if err := t.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(message_id), 0) FROM "+table).Scan(&id); err != nil {
			return 0, fmt.Errorf("max message_id of %s: %w", table, err)
		}
		if id > 0 {
			return id, nil
		}
	}
	return 0, nil
}
