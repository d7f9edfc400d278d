package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// DedupTTL is how long the in-memory store keeps a dedup record, the MySQL writer's default.
const DedupTTL = 30 * 24 * time.Hour

// RouteMirror is the in-memory ports.RouteMirror over the tenant data of a ShardStore.
type RouteMirror struct {
	shards *ShardStore
}

var _ ports.RouteMirror = (*RouteMirror)(nil)

// NewRouteMirror returns the mirror reader over shards.
func NewRouteMirror(shards *ShardStore) *RouteMirror { return &RouteMirror{shards: shards} }

// Topics lists the mirror's topics after `after`, ascending.
func (r *RouteMirror) Topics(_ context.Context, tenant, after string, limit int) ([]string, error) {
	r.shards.mu.Lock()
	defer r.shards.mu.Unlock()
	return pageTopics(r.shards.db(tenant).mirror, func(map[month.Month]route.Segment) bool { return true }, after, limit), nil
}

// TopicsIn lists the topics with a segment in m after `after`, ascending.
func (r *RouteMirror) TopicsIn(_ context.Context, tenant string, m month.Month, after string, limit int) ([]string, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("mirror topics: %w: %d", month.ErrInvalid, int32(m))
	}
	r.shards.mu.Lock()
	defer r.shards.mu.Unlock()
	in := func(months map[month.Month]route.Segment) bool { _, ok := months[m]; return ok }
	return pageTopics(r.shards.db(tenant).mirror, in, after, limit), nil
}

// TopicsSince lists the topics with a message in m at or after since, after `after`, ascending.
func (r *RouteMirror) TopicsSince(_ context.Context, tenant string, m month.Month, since time.Time, after string, limit int) ([]string, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("mirror topics: %w: %d", month.ErrInvalid, int32(m))
	}
	r.shards.mu.Lock()
	defer r.shards.mu.Unlock()
	in := func(months map[month.Month]route.Segment) bool {
		seg, ok := months[m]
		return ok && !seg.MaxCreatedAt.Before(since)
	}
	return pageTopics(r.shards.db(tenant).mirror, in, after, limit), nil
}

func pageTopics(mirror map[string]map[month.Month]route.Segment, keep func(map[month.Month]route.Segment) bool, after string, limit int) []string {
	var out []string
	for t, months := range mirror {
		if t > after && len(months) > 0 && keep(months) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, strings.Compare)
	return out[:min(len(out), max(limit, 0))]
}

// TableSegment reads the topic's real range in m's table.
func (r *RouteMirror) TableSegment(_ context.Context, tenant string, m month.Month, topicName string) (route.Segment, bool, error) {
	r.shards.mu.Lock()
	defer r.shards.mu.Unlock()
	return r.shards.db(tenant).tableSegment(m, topicName)
}

func (d *tenantMessages) tableSegment(m month.Month, topicName string) (route.Segment, bool, error) {
	table, err := d.table(m)
	if err != nil {
		return route.Segment{}, false, fmt.Errorf("table range of %s: %w", topicName, err)
	}
	seg := route.Segment{Month: m}
	for k, msg := range table {
		if k.topic == topicName {
			seg = seg.Grow(k.seq, msg.CreatedAt)
		}
	}
	return seg, seg.Count > 0, nil
}

// Recount rewrites the topic's mirror row of m from m's table.
func (r *RouteMirror) Recount(_ context.Context, tenant string, m month.Month, topicName string) (route.Segment, bool, error) {
	r.shards.mu.Lock()
	defer r.shards.mu.Unlock()
	d := r.shards.db(tenant)
	seg, found, err := d.tableSegment(m, topicName)
	if err != nil {
		return route.Segment{}, false, fmt.Errorf("recount: %w", err)
	}
	months := d.mirror[topicName]
	switch {
	case found && months == nil:
		d.mirror[topicName] = map[month.Month]route.Segment{m: seg}
	case found:
		months[m] = seg
	default:
		delete(months, m)
	}
	return seg, found, nil
}

// Housekeeping is the in-memory ports.ShardHousekeeping over the tenant data of a ShardStore.
type Housekeeping struct {
	shards *ShardStore
}

var _ ports.ShardHousekeeping = (*Housekeeping)(nil)

// NewHousekeeping returns the upkeep over shards.
func NewHousekeeping(shards *ShardStore) *Housekeeping { return &Housekeeping{shards: shards} }

// PurgeExpiredDedup deletes up to limit records that expired before now, oldest first.
func (h *Housekeeping) PurgeExpiredDedup(_ context.Context, tenant string, now time.Time, limit int) (int64, error) {
	h.shards.mu.Lock()
	defer h.shards.mu.Unlock()
	d := h.shards.db(tenant)
	var expired []messageDedupKey
	for k, rec := range d.dedup {
		if rec.expires.Before(now) {
			expired = append(expired, k)
		}
	}
	slices.SortFunc(expired, func(a, b messageDedupKey) int { return d.dedup[a].expires.Compare(d.dedup[b].expires) })
	expired = expired[:min(len(expired), max(limit, 0))]
	for _, k := range expired {
		delete(d.dedup, k)
	}
	return int64(len(expired)), nil
}

// RefreshStats only checks the month: the in-memory Catalog computes its statistics from the
// mirror on every read, so there is nothing to copy.
func (h *Housekeeping) RefreshStats(_ context.Context, tenant string, m month.Month) error {
	if !m.Valid() {
		return fmt.Errorf("refresh stats: %w: %d", month.ErrInvalid, int32(m))
	}
	h.shards.mu.Lock()
	defer h.shards.mu.Unlock()
	if _, ok := h.shards.db(tenant).catalog[m]; !ok {
		return fmt.Errorf("refresh stats of %s: %w", m, shard.ErrMonthMissing)
	}
	return nil
}
