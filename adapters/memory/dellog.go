package memory

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/ports"
)

// DeleteLog is the in-memory im_dellog. It writes into the tenant data of a ShardStore, so the
// MessageStore over the same ShardStore hides the ranges, as the MySQL page query does.
type DeleteLog struct {
	shards *ShardStore
}

type dellogKey struct {
	topic string
	user  int64
}

// seqRange is [low, hi).
type seqRange struct{ low, hi int64 }

var _ ports.DeleteLog = (*DeleteLog)(nil)

// NewDeleteLog returns a delete log over the tenant data of shards.
func NewDeleteLog(shards *ShardStore) *DeleteLog { return &DeleteLog{shards: shards} }

// HideRange records [low, hi) for user.
func (l *DeleteLog) HideRange(_ context.Context, tenant, topicName string, user, low, hi int64) error {
	if user <= 0 || low < 1 || hi <= low {
		return fmt.Errorf("hide %s [%d, %d) for %d: invalid range or user", topicName, low, hi, user)
	}
	l.shards.mu.Lock()
	defer l.shards.mu.Unlock()
	d := l.shards.db(tenant)
	if d.dellog == nil {
		d.dellog = make(map[dellogKey][]seqRange)
	}
	k := dellogKey{topic: topicName, user: user}
	d.dellog[k] = append(d.dellog[k], seqRange{low: low, hi: hi})
	return nil
}

// hidden reports whether user deleted seq of topic for themself; viewer 0 sees everything.
// The caller holds the ShardStore's lock.
func (d *tenantMessages) hidden(topicName string, viewer, seq int64) bool {
	if viewer == 0 {
		return false
	}
	for _, r := range d.dellog[dellogKey{topic: topicName, user: viewer}] {
		if seq >= r.low && seq < r.hi {
			return true
		}
	}
	return false
}
