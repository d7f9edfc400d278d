package mysql

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/ports"
)

var _ ports.HiddenRanges = (*DeleteLog)(nil)

// HiddenRanges reads the viewer's ranges intersecting [from, to] back from im_dellog.
func (l *DeleteLog) HiddenRanges(ctx context.Context, tenant, topicName string, user, from, to int64) ([]ports.SeqRange, error) {
	t, err := l.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.HiddenRanges(ctx, sqlcdb.HiddenRangesParams{Topic: topicName, Viewer: user, FromSeq: from, ToSeq: to})
	if err != nil {
		return nil, fmt.Errorf("hidden ranges of %s for %d: %w", topicName, user, err)
	}
	out := make([]ports.SeqRange, len(rows))
	for i, r := range rows {
		out[i] = ports.SeqRange{Low: r.Low, Hi: r.Hi}
	}
	return out, nil
}
