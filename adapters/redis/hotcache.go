package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/ports"
)

// Defaults of HotCacheOptions (seed 000 §1.7: 24 h of hot messages).
const (
	DefaultHotWindow      = 24 * time.Hour
	DefaultHotMaxPerTopic = 1000
)

// HotCacheOptions bound what the hot cache keeps per topic; zero fields take the defaults.
type HotCacheOptions struct {
	// Window is how far before a topic's newest cached message entries are kept, and how long
	// an idle topic's entries live.
	Window time.Duration
	// MaxPerTopic caps the entries of one topic, so a busy topic cannot grow without bound.
	MaxPerTopic int
}

// HotCache is ports.HotCache: per topic one ZSET, score seq, member "<created_ms>:<message
// JSON>". The created_ms prefix lets the trim script age entries out without decoding JSON.
type HotCache struct {
	c    rueidis.Client
	opts HotCacheOptions
}

var _ ports.HotCache = (*HotCache)(nil)

// NewHotCache returns the hot cache on c.
func NewHotCache(c rueidis.Client, opts HotCacheOptions) *HotCache {
	if opts.Window <= 0 {
		opts.Window = DefaultHotWindow
	}
	if opts.MaxPerTopic <= 0 {
		opts.MaxPerTopic = DefaultHotMaxPerTopic
	}
	return &HotCache{c: c, opts: opts}
}

// HotMessages is the topic's hot-message ZSET (DESIGN §3: 24 h hot messages per topic).
func (k Keys) HotMessages(topic string) string { return k.prefix + "groupmsg:hot:" + topic }

// putArgs validates m and returns what put_hot (luaPutHot, run by CommitFollowUp) takes: the
// topic's key, and seq, member, created_ms, window_ms and max_per_topic. cache=false: nothing
// to write, because m is invalid (err) or not cacheable (ports.Cacheable).
func (h *HotCache) putArgs(tenant string, m message.Message) (key string, args []string, cache bool, err error) {
	k, err := topicKeys(tenant, m.Topic)
	if err != nil {
		return "", nil, false, fmt.Errorf("cache message: %w", err)
	}
	if ok, err := ports.Cacheable(m); !ok {
		return "", nil, false, err
	}
	raw, err := marshalJSON(m)
	if err != nil {
		return "", nil, false, fmt.Errorf("cache %s seq %d: encode: %w", m.Topic, m.Seq, err)
	}
	created := strconv.FormatInt(m.CreatedAt.UnixMilli(), 10)
	return k.HotMessages(m.Topic), []string{
		itoa(m.Seq), created + ":" + string(raw), created,
		itoa(h.opts.Window.Milliseconds()), strconv.Itoa(h.opts.MaxPerTopic),
	}, true, nil
}

// After returns cached messages with seq > after, ascending.
func (h *HotCache) After(ctx context.Context, tenant, topic string, after int64, limit int) ([]message.Message, error) {
	k, err := topicKeys(tenant, topic)
	if err != nil {
		return nil, fmt.Errorf("cached messages after %d: %w", after, err)
	}
	if limit <= 0 {
		return nil, nil
	}
	cmd := h.c.B().Zrange().Key(k.HotMessages(topic)).Min("("+itoa(after)).Max("+inf").
		Byscore().Limit(0, int64(limit)).Build()
	return h.read(ctx, cmd, topic)
}

// Before returns cached messages with seq < before (0: from the newest), descending.
func (h *HotCache) Before(ctx context.Context, tenant, topic string, before int64, limit int) ([]message.Message, error) {
	k, err := topicKeys(tenant, topic)
	if err != nil {
		return nil, fmt.Errorf("cached messages before %d: %w", before, err)
	}
	if limit <= 0 {
		return nil, nil
	}
	top := "+inf"
	if before > 0 {
		top = "(" + itoa(before)
	}
	// With REV the range is given from the high end down.
	cmd := h.c.B().Zrange().Key(k.HotMessages(topic)).Min(top).Max("-inf").
		Byscore().Rev().Limit(0, int64(limit)).Build()
	return h.read(ctx, cmd, topic)
}

func (h *HotCache) read(ctx context.Context, cmd rueidis.Completed, topic string) ([]message.Message, error) {
	members, err := h.c.Do(ctx, cmd).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("cached messages of %s: %w", topic, err)
	}
	out := make([]message.Message, 0, len(members))
	for _, member := range members {
		_, raw, ok := strings.Cut(member, ":")
		if !ok {
			return nil, fmt.Errorf("cached message of %s: malformed entry %.40q", topic, member)
		}
		var m message.Message
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return nil, fmt.Errorf("cached message of %s: %w", topic, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// Invalidate drops the entry of one seq.
func (h *HotCache) Invalidate(ctx context.Context, tenant, topic string, seq int64) error {
	k, err := topicKeys(tenant, topic)
	if err != nil {
		return fmt.Errorf("invalidate cached message: %w", err)
	}
	s := itoa(seq)
	if err := h.c.Do(ctx, h.c.B().Zremrangebyscore().Key(k.HotMessages(topic)).Min(s).Max(s).Build()).Error(); err != nil {
		return fmt.Errorf("invalidate %s seq %d in %s: %w", topic, seq, tenant, err)
	}
	return nil
}
