package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/ports"
)

// HotCache is an in-memory ports.HotCache with the Redis adapter's rules: one entry per seq,
// trimmed from the lowest seq by count and by age relative to the newest Put, expiring a window
// after the topic's last Put. Like Redis it keeps messages as JSON, so what does not survive
// encoding does not survive here either.
type HotCache struct {
	clock       func() time.Time
	window      time.Duration
	maxPerTopic int

	mu     sync.Mutex
	topics map[tenantTopic]*hotTopic
}

type hotTopic struct {
	entries map[int64]hotEntry
	expires time.Time
}

type hotEntry struct {
	created time.Time
	raw     []byte
}

var _ ports.HotCache = (*HotCache)(nil)

// NewHotCache returns an empty hot cache keeping window of messages and at most maxPerTopic
// per topic; clock expires idle topics.
func NewHotCache(clock func() time.Time, window time.Duration, maxPerTopic int) *HotCache {
	return &HotCache{clock: clock, window: window, maxPerTopic: maxPerTopic, topics: make(map[tenantTopic]*hotTopic)}
}

// Put caches a committed message, then trims the topic: the hot part of a commit follow-up
// (ports.FollowUp.Hot), and how tests fill the cache.
func (h *HotCache) Put(_ context.Context, tenant string, m message.Message) error {
	tk, err := validTenantTopic(tenant, m.Topic)
	if err != nil {
		return fmt.Errorf("cache message: %w", err)
	}
	if ok, err := ports.Cacheable(m); !ok {
		return err
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("cache %s seq %d: encode: %w", m.Topic, m.Seq, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.live(tk)
	if t == nil {
		t = &hotTopic{entries: make(map[int64]hotEntry)}
		h.topics[tk] = t
	}
	created := time.UnixMilli(m.CreatedAt.UnixMilli())
	t.entries[m.Seq] = hotEntry{created: created, raw: raw}
	seqs := slices.Sorted(maps.Keys(t.entries))
	cutoff := created.Add(-h.window)
	for i, s := range seqs {
		if len(seqs)-i <= h.maxPerTopic && !t.entries[s].created.Before(cutoff) {
			break
		}
		delete(t.entries, s)
	}
	t.expires = h.clock().Add(h.window)
	return nil
}

// After returns cached messages with seq > after, ascending.
func (h *HotCache) After(_ context.Context, tenant, topic string, after int64, limit int) ([]message.Message, error) {
	return h.scan(tenant, topic, limit, false, func(s int64) bool { return s > after })
}

// Before returns cached messages with seq < before (0: from the newest), descending.
func (h *HotCache) Before(_ context.Context, tenant, topic string, before int64, limit int) ([]message.Message, error) {
	return h.scan(tenant, topic, limit, true, func(s int64) bool { return before <= 0 || s < before })
}

func (h *HotCache) scan(tenant, topic string, limit int, desc bool, keep func(int64) bool) ([]message.Message, error) {
	tk, err := validTenantTopic(tenant, topic)
	if err != nil {
		return nil, fmt.Errorf("cached messages: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.live(tk)
	if t == nil || limit <= 0 {
		return nil, nil
	}
	seqs := slices.Sorted(maps.Keys(t.entries))
	if desc {
		slices.Reverse(seqs)
	}
	var out []message.Message
	for _, s := range seqs {
		if len(out) == limit {
			break
		}
		if !keep(s) {
			continue
		}
		var m message.Message
		if err := json.Unmarshal(t.entries[s].raw, &m); err != nil {
			return nil, fmt.Errorf("cached message of %s: %w", topic, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// Invalidate drops the entry of one seq.
func (h *HotCache) Invalidate(_ context.Context, tenant, topic string, seq int64) error {
	tk, err := validTenantTopic(tenant, topic)
	if err != nil {
		return fmt.Errorf("invalidate cached message: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.live(tk); t != nil {
		delete(t.entries, seq)
	}
	return nil
}

// live returns the topic's entries unless they expired; the caller holds h.mu.
func (h *HotCache) live(tk tenantTopic) *hotTopic {
	t, ok := h.topics[tk]
	if !ok {
		return nil
	}
	if !h.clock().Before(t.expires) || len(t.entries) == 0 {
		delete(h.topics, tk)
		return nil
	}
	return t
}
