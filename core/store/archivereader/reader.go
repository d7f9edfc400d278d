// Package archivereader serves archived months (seed 000 §10: 在线查询走归档服务) with the
// semantics of the month tables: Get and Page of ports.MessageStore and one month of
// ports.MessageSearch, read from the archive files instead of MySQL. Manifests are cached,
// and so are decoded chunks (an LRU), so paging through an archived topic reads each chunk
// once. Store puts it in front of the MySQL store for the months the catalog lists as
// archived, so core/usecase/history and everything above it work across live and archived months
// unchanged.
package archivereader

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// Cache sizes when Config leaves them zero.
const (
	DefaultManifests = 64
	DefaultChunks    = 256
)

// Config sizes the caches.
type Config struct {
	Manifests int // manifests kept
	Chunks    int // decoded chunks kept (each up to the archiver's chunk size in rows)
	// StateTTL is how long a month's archive state is cached (States); ≤ 0: DefaultStateTTL.
	StateTTL time.Duration
}

// Reader reads archived months.
type Reader struct {
	blobs     ports.BlobStore
	hidden    ports.HiddenRanges
	metrics   ports.Metrics
	manifests *lru[monthKey, *archive.Manifest]
	chunks    *lru[string, []archive.Record]
}

type monthKey struct {
	tenant string
	month  month.Month
}

// NewReader returns a reader of the archives in blobs; hidden hides a viewer's deleted ranges
// as the month-table pages do.
func NewReader(cfg Config, blobs ports.BlobStore, hidden ports.HiddenRanges, metrics ports.Metrics) *Reader {
	if cfg.Manifests <= 0 {
		cfg.Manifests = DefaultManifests
	}
	if cfg.Chunks <= 0 {
		cfg.Chunks = DefaultChunks
	}
	return &Reader{
		blobs: blobs, hidden: hidden, metrics: metrics,
		manifests: newLRU[monthKey, *archive.Manifest](cfg.Manifests), chunks: newLRU[string, []archive.Record](cfg.Chunks),
	}
}

// ErrNoArchive: the month has no complete archive (no manifest).
var ErrNoArchive = errors.New("month has no archive")

// Manifest returns the month's manifest, from the cache when it has it.
func (r *Reader) Manifest(ctx context.Context, tenant string, m month.Month) (*archive.Manifest, error) {
	k := monthKey{tenant, m}
	if man, ok := r.manifests.get(k); ok {
		return man, nil
	}
	raw, err := r.blobs.Get(ctx, archive.ManifestKey(tenant, m))
	if errors.Is(err, archive.ErrNoBlob) {
		return nil, fmt.Errorf("%w: %s of %s", ErrNoArchive, m, tenant)
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest of %s: %w", m, err)
	}
	man, err := decodeManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", m, err)
	}
	if man.Tenant != tenant || man.Month != m.String() {
		return nil, fmt.Errorf("%w: manifest of %s/%s stored as %s/%s", archive.ErrCorrupt, man.Tenant, man.Month, tenant, m)
	}
	r.manifests.put(k, man)
	return man, nil
}

// decodeManifest parses a manifest and checks its format and topic order.
func decodeManifest(raw []byte) (*archive.Manifest, error) {
	var man archive.Manifest
	if err := json.Unmarshal(raw, &man); err != nil || man.Format != archive.ManifestFormat {
		return nil, fmt.Errorf("%w: not a %s manifest", archive.ErrCorrupt, archive.ManifestFormat)
	}
	if !slices.IsSortedFunc(man.Topics, func(a, b archive.TopicEntry) int { return strings.Compare(a.Topic, b.Topic) }) {
		return nil, fmt.Errorf("%w: manifest topics out of order", archive.ErrCorrupt)
	}
	return &man, nil
}

// Forget drops what the caches hold of a month, after it was restored, purged or archived
// again.
func (r *Reader) Forget(tenant string, m month.Month) {
	r.manifests.dropIf(func(k monthKey) bool { return k == monthKey{tenant, m} })
	prefix := archive.MonthPrefix(tenant, m)
	r.chunks.dropIf(func(key string) bool { return strings.HasPrefix(key, prefix) })
}

// Chunk reads one chunk, checks it against the manifest's hash and description and decodes it.
// cache=false leaves the LRU alone, for scans that would only flush it.
func (r *Reader) Chunk(ctx context.Context, c archive.Chunk, topic string, cache bool) ([]archive.Record, error) {
	if recs, ok := r.chunks.get(c.Key); ok {
		r.metrics.Inc("group_message_archive_chunk_cache_total", "hit")
		return recs, nil
	}
	r.metrics.Inc("group_message_archive_chunk_cache_total", "miss")
	raw, err := r.blobs.Get(ctx, c.Key)
	if err != nil {
		return nil, fmt.Errorf("read chunk %s: %w", c.Key, err)
	}
	recs, err := DecodeVerified(raw, c, topic)
	if err != nil {
		return nil, err
	}
	if cache {
		r.chunks.put(c.Key, recs)
	}
	return recs, nil
}

// DecodeVerified decodes a chunk's stored bytes after checking them against what the manifest
// says of them: size, SHA-256, topic, seq range and row count.
func DecodeVerified(raw []byte, c archive.Chunk, topic string) ([]archive.Record, error) {
	sum := sha256.Sum256(raw)
	if int64(len(raw)) != c.Bytes || hex.EncodeToString(sum[:]) != c.SHA256 {
		return nil, fmt.Errorf("%w: %s does not match its manifest hash", archive.ErrCorrupt, c.Key)
	}
	h, recs, err := archive.DecodeChunk(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", c.Key, err)
	}
	if h.Topic != topic || h.MinSeq != c.MinSeq || h.MaxSeq != c.MaxSeq || h.Count != c.Count {
		return nil, fmt.Errorf("%w: %s describes %s %d-%d×%d, the manifest %s %d-%d×%d", archive.ErrCorrupt,
			c.Key, h.Topic, h.MinSeq, h.MaxSeq, h.Count, topic, c.MinSeq, c.MaxSeq, c.Count)
	}
	return recs, nil
}

// Get reads one message of an archived month.
func (r *Reader) Get(ctx context.Context, tenant string, m month.Month, topic string, seq int64) (message.Message, error) {
	r.metrics.Inc("group_message_archive_read_total", "get")
	man, err := r.Manifest(ctx, tenant, m)
	if err != nil {
		return message.Message{}, err
	}
	t, ok := man.Topic(topic)
	i := -1
	if ok {
		i = t.ChunkFor(seq)
	}
	if i < 0 {
		return message.Message{}, fmt.Errorf("get %s seq %d in archived %s: %w", topic, seq, m, message.ErrNotFound)
	}
	recs, err := r.Chunk(ctx, t.Chunks[i], topic, true)
	if err != nil {
		return message.Message{}, err
	}
	j, found := slices.BinarySearchFunc(recs, seq, func(rec archive.Record, s int64) int { return cmp.Compare(rec.Seq, s) })
	if !found {
		return message.Message{}, fmt.Errorf("get %s seq %d in archived %s: %w", topic, seq, m, message.ErrNotFound)
	}
	return recs[j].Message(m)
}

// Page reads one archived month of a topic with the month-table semantics of
// ports.MessageStore.Page: exclusive bounds, direction, tombstones on request, and the
// viewer's deleted ranges hidden.
func (r *Reader) Page(ctx context.Context, tenant string, m month.Month, q message.PageQuery) ([]message.Message, error) {
	r.metrics.Inc("group_message_archive_read_total", "page")
	if q.Limit <= 0 {
		return nil, nil
	}
	man, err := r.Manifest(ctx, tenant, m)
	if err != nil {
		return nil, err
	}
	t, ok := man.Topic(q.Topic)
	if !ok {
		return nil, nil
	}
	lo, hi := max(q.After+1, t.MinSeq), t.MaxSeq
	if q.Before > 0 {
		hi = min(hi, q.Before-1)
	}
	if lo > hi {
		return nil, nil
	}
	var hidden []ports.SeqRange
	if q.Viewer != 0 {
		if hidden, err = r.hidden.HiddenRanges(ctx, tenant, q.Topic, q.Viewer, lo, hi); err != nil {
			return nil, fmt.Errorf("deleted ranges of %s: %w", q.Topic, err)
		}
	}
	chunks := slices.Clone(t.Chunks)
	if q.Desc {
		slices.Reverse(chunks)
	}
	var out []message.Message
	for _, c := range chunks {
		if c.MaxSeq < lo || c.MinSeq > hi {
			continue
		}
		recs, err := r.Chunk(ctx, c, q.Topic, true)
		if err != nil {
			return nil, err
		}
		if q.Desc {
			recs = slices.Clone(recs)
			slices.Reverse(recs)
		}
		for _, rec := range recs {
			if rec.Seq < lo || rec.Seq > hi || (!q.IncludeDeleted && rec.Status == string(message.StatusDeleted)) || inRanges(rec.Seq, hidden) {
				continue
			}
			msg, err := rec.Message(m)
			if err != nil {
				return nil, err
			}
			if out = append(out, msg); len(out) == q.Limit {
				return out, nil
			}
		}
	}
	return out, nil
}

// Search is one archived month of a short-term search (ports.MessageSearch): status normal,
// created in [From, To), content holding Text case-insensitively like the month tables'
// collation, newest first. A tenant-wide search reads every chunk of the month once, past the
// chunk cache.
func (r *Reader) Search(ctx context.Context, tenant string, m month.Month, q ports.SearchQuery) ([]message.Message, error) {
	r.metrics.Inc("group_message_archive_read_total", "search")
	man, err := r.Manifest(ctx, tenant, m)
	if err != nil {
		return nil, err
	}
	topics := man.Topics
	if q.Topic != "" {
		t, ok := man.Topic(q.Topic)
		if !ok {
			return nil, nil
		}
		topics = []archive.TopicEntry{*t}
	}
	needle := strings.ToLower(q.Text)
	var out []message.Message
	for _, t := range topics {
		for _, c := range t.Chunks {
			recs, err := r.Chunk(ctx, c, t.Topic, q.Topic != "")
			if err != nil {
				return nil, err
			}
			for _, rec := range recs {
				if rec.Status != string(message.StatusNormal) || rec.CreatedAt.Before(q.From) || !rec.CreatedAt.Before(q.To) ||
					rec.Content == nil || !strings.Contains(strings.ToLower(*rec.Content), needle) {
					continue
				}
				msg, err := rec.Message(m)
				if err != nil {
					return nil, err
				}
				out = append(out, msg)
			}
		}
	}
	slices.SortFunc(out, message.NewestFirst)
	return out[:min(len(out), max(q.Limit, 0))], nil
}

func inRanges(seq int64, ranges []ports.SeqRange) bool {
	for _, r := range ranges {
		if seq >= r.Low && seq < r.Hi {
			return true
		}
	}
	return false
}
