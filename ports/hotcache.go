package ports

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/route"
)

// HotCache is the Redis copy of each topic's newest messages (seed 000 §1.7, §6.1): a ZSET per
// topic, score seq, trimmed to a time window (24 h) and a count cap. MySQL stays the source of
// truth; readers use a cached page only when it covers the page whole, so the cache may lose
// entries at any time (trim, eviction, a failed write) without making a read wrong. It is
// written by the hot part of a commit follow-up (FollowUp.Hot).
type HotCache interface {
	// After returns up to limit cached messages of topic with seq > after, ascending.
	After(ctx context.Context, tenant, topic string, after int64, limit int) ([]message.Message, error)
	// Before returns up to limit cached messages of topic with seq < before (0: from the newest),
	// descending.
	Before(ctx context.Context, tenant, topic string, before int64, limit int) ([]message.Message, error)
	// Invalidate drops the cached entry of (topic, seq), e.g. after a recall or an edit, so
	// readers go to MySQL for it until the entry ages out.
	Invalidate(ctx context.Context, tenant, topic string, seq int64) error
}

// MaxHotSeq is the largest seq a hot cache holds: a Redis ZSET score is a double, exact up to
// 2^53. Every HotCache keeps to it, so the fake behaves as Redis does.
const MaxHotSeq = int64(1) << 53

// Cacheable is the rule of FollowUp.Hot for m: an error for a message without a positive seq
// or a creation time, false for a seq past MaxHotSeq (not cached, not an error).
func Cacheable(m message.Message) (bool, error) {
	if m.Seq <= 0 || m.CreatedAt.IsZero() || m.CreatedAt.UnixMilli() < 0 {
		return false, fmt.Errorf("cache %s seq %d: needs a positive seq and a creation time", m.Topic, m.Seq)
	}
	return m.Seq <= MaxHotSeq, nil
}

// SeqRange is the seq interval [Low, Hi).
type SeqRange struct {
	Low, Hi int64
}

// HiddenRanges reads back what DeleteLog recorded, so a page served from the hot cache hides
// the same seqs from a viewer as MessageStore.Page does.
type HiddenRanges interface {
	// HiddenRanges returns the ranges of topic that user deleted for themself and that
	// intersect seqs [from, to], in no particular order.
	HiddenRanges(ctx context.Context, tenant, topic string, user, from, to int64) ([]SeqRange, error)
}

// RouteFiller is a RouteCache that can fill in a missing route without overwriting one written
// meanwhile. A query that rebuilds a route from the MySQL mirror uses it: a plain Replace could
// put back a mirror snapshot older than a route that a concurrent rebuild and later send
// updates already extended.
type RouteFiller interface {
	RouteCache
	// ReplaceIfMissing writes r as the topic's route only if Redis holds none; written reports
	// whether it did. An empty r writes nothing.
	ReplaceIfMissing(ctx context.Context, tenant, topic string, r route.Route) (written bool, err error)
}
