package memory

import (
	"context"

	"github.com/imdhq/imd/ports"
)

var _ ports.HiddenRanges = (*DeleteLog)(nil)

// HiddenRanges returns the user's recorded ranges intersecting [from, to].
func (l *DeleteLog) HiddenRanges(_ context.Context, tenant, topicName string, user, from, to int64) ([]ports.SeqRange, error) {
	l.shards.mu.Lock()
	defer l.shards.mu.Unlock()
	var out []ports.SeqRange
	for _, r := range l.shards.db(tenant).dellog[dellogKey{topic: topicName, user: user}] {
		if r.low <= to && r.hi > from {
			out = append(out, ports.SeqRange{Low: r.low, Hi: r.hi})
		}
	}
	return out, nil
}
