// Package longsearch is the long-term search of seed 000 §6.6: an index fed after COMMIT and
// by a backfill, which answers topic+seq only; the server then reads the messages from the
// month tables or the archive and checks membership and the reader's deleted ranges again
// before anything is returned. The short-term search of core/usecase/history (≤ 3 months, no index)
// stays as it is.
package longsearch

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/fulltext"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/ports"
)

// Defaults of IndexerConfig. Every write makes a segment that the index merges later: at a
// few hundred messages a second, writes every 200 ms kept the merger at 8–14 % of imd's CPU
// (W3), every second at 2–4 %. A second's delay is nothing to a search over old messages; at
// high rates the batch fills first anyway.
//
// DefaultWriters: building a write's segment runs on the writing goroutine, ~30–70 µs a
// document, so one writer would cap a node at ~14–33 k messages a second (docs/BENCHMARKS.md
// section 25, issue 30 part 3); full batches are written by up to this many at once.
const (
	DefaultQueue   = 10_000
	DefaultBatch   = 256
	DefaultFlush   = time.Second
	DefaultWriters = 4
)

// IndexerConfig tunes the feed.
type IndexerConfig struct {
	Queue   int           // operations waiting; a full queue drops (the backfill repairs)
	Batch   int           // operations per index write
	Flush   time.Duration // longest wait before a partial batch is written
	Writers int           // batches written at once, when they come full
}

// Fetcher reads a message by topic+seq wherever it lives (core/usecase/history, as an admin).
type Fetcher func(ctx context.Context, tenant, topic string, seq int64) (message.Message, error)

// Indexer feeds the index from the send path, off its goroutine: Committed only queues.
type Indexer struct {
	cfg     IndexerConfig
	index   ports.SearchIndex
	fetch   Fetcher
	metrics ports.Metrics
	log     *slog.Logger

	ops     chan op
	stop    context.CancelFunc
	stopped chan struct{}
	once    sync.Once

	// order lets batches of additions only be written together, while a batch that removes
	// or re-reads an edit waits for every earlier one and holds back every later one: the
	// index then ends as the queue's order left it (a recall after its message, an edit after
	// the last one). The collector takes it in queue order, before the write starts.
	order   sync.RWMutex
	writers chan struct{} // one token per write in flight
	writing sync.WaitGroup
}

// op is one queued index change: a message to index, or a key to remove.
type op struct {
	tenant string
	doc    *fulltext.Doc
	remove *fulltext.Key
	// edited names a message whose new content is read when the op is applied.
	edited *fulltext.Key
}

var _ ports.CommitListener = (*Indexer)(nil)

// NewIndexer returns a feed; Start runs it.
func NewIndexer(cfg IndexerConfig, index ports.SearchIndex, fetch Fetcher, metrics ports.Metrics, log *slog.Logger) *Indexer {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Flush <= 0 {
		cfg.Flush = DefaultFlush
	}
	if cfg.Writers <= 0 {
		cfg.Writers = DefaultWriters
	}
	return &Indexer{cfg: cfg, index: index, fetch: fetch, metrics: metrics, log: log, ops: make(chan op, cfg.Queue), stopped: make(chan struct{}),
		writers: make(chan struct{}, cfg.Writers)}
}

// Committed queues what a stored message changes in the index: a searchable message is
// added, a recall or delete-for-all removes its target, an edit re-reads its target. It never
// blocks: with the queue full the change is dropped and counted.
func (x *Indexer) Committed(_ context.Context, tenant string, m message.Message) {
	var o op
	if d, ok := fulltext.DocOf(m); ok {
		o = op{tenant: tenant, doc: &d}
	} else if c, ok := msgref.ChangeOf(m); ok {
		k := fulltext.Key{Topic: m.Topic, Seq: c.Seq}
		if c.Action == message.ActionEdit {
			o = op{tenant: tenant, edited: &k}
		} else {
			o = op{tenant: tenant, remove: &k}
		}
	} else {
		return
	}
	select {
	case x.ops <- o:
	default:
		x.metrics.Inc("message_search_index_total", "dropped")
	}
}

// Start runs the feed until Stop.
func (x *Indexer) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	x.stop = cancel
	go func() {
		defer close(x.stopped)
		x.run(ctx)
	}()
}

// Stop writes what is queued and ends the feed.
func (x *Indexer) Stop() {
	x.once.Do(func() {
		if x.stop != nil {
			x.stop()
			<-x.stopped
		}
	})
}

func (x *Indexer) run(ctx context.Context) {
	t := time.NewTicker(x.cfg.Flush)
	defer t.Stop()
	var batch []op
	for {
		select {
		case o := <-x.ops:
			if batch = append(batch, o); len(batch) < x.cfg.Batch {
				continue
			}
		case <-t.C:
		case <-ctx.Done():
			for drained := false; !drained; {
				select {
				case o := <-x.ops:
					batch = append(batch, o)
				default:
					drained = true
				}
			}
			x.dispatch(context.WithoutCancel(ctx), batch)
			x.writing.Wait()
			return
		}
		if len(batch) > 0 {
			// Stop cancels ctx while writes may be in flight; they finish, as the last does.
			x.dispatch(context.WithoutCancel(ctx), batch)
			batch = make([]op, 0, x.cfg.Batch)
		}
	}
}

// dispatch writes batch on a goroutine of its own once a writer is free and the batches it
// must follow are written (see order). At a low rate the flush finds a batch rarely and alone,
// so writes go one at a time as one writer's would, and make no more segments.
func (x *Indexer) dispatch(ctx context.Context, batch []op) {
	exclusive := slices.ContainsFunc(batch, func(o op) bool { return o.doc == nil })
	x.writers <- struct{}{}
	unlock := x.order.RUnlock
	if exclusive {
		x.order.Lock()
		unlock = x.order.Unlock
	} else {
		x.order.RLock()
	}
	x.writing.Go(func() {
		defer func() { <-x.writers }()
		defer unlock()
		x.apply(ctx, batch)
	})
}

// apply writes a batch, per tenant in queue order: runs of additions and removals are each
// one index call.
func (x *Indexer) apply(ctx context.Context, batch []op) {
	for len(batch) > 0 {
		tenant := batch[0].tenant
		var docs []fulltext.Doc
		var removes []fulltext.Key
		n := 0
		for n < len(batch) && batch[n].tenant == tenant {
			o := batch[n]
			switch {
			case o.doc != nil:
				docs = append(docs, *o.doc)
			case o.remove != nil:
				removes = append(removes, *o.remove)
			case o.edited != nil:
				if d, ok := x.refetch(ctx, tenant, *o.edited); ok {
					docs = append(docs, d)
				} else {
					removes = append(removes, *o.edited)
				}
			}
			n++
		}
		batch = batch[n:]
		x.write(ctx, tenant, docs, removes)
	}
}

// refetch reads an edited message's current text; ok=false removes it from the index.
func (x *Indexer) refetch(ctx context.Context, tenant string, k fulltext.Key) (fulltext.Doc, bool) {
	m, err := x.fetch(ctx, tenant, k.Topic, k.Seq)
	if err != nil {
		x.log.WarnContext(ctx, "edited message not re-indexed", "topic", k.Topic, "seq", k.Seq, "err", err)
		return fulltext.Doc{}, false
	}
	return fulltext.DocOf(m)
}

func (x *Indexer) write(ctx context.Context, tenant string, docs []fulltext.Doc, removes []fulltext.Key) {
	if len(docs) > 0 {
		x.count(ctx, x.index.Index(ctx, tenant, docs), "indexed", len(docs))
	}
	if len(removes) > 0 {
		x.count(ctx, x.index.Remove(ctx, tenant, removes), "removed", len(removes))
	}
}

func (x *Indexer) count(ctx context.Context, err error, status string, n int) {
	if err != nil {
		status = "failed"
		x.log.WarnContext(ctx, "search index write failed; the backfill repairs it", "err", err)
	}
	x.metrics.Add("message_search_index_total", float64(n), status)
}

// Backfill indexes stored messages directly (reindex of stored months).
func (x *Indexer) Backfill(ctx context.Context, tenant string, msgs []message.Message) error {
	var docs []fulltext.Doc
	for _, m := range msgs {
		if d, ok := fulltext.DocOf(m); ok {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil
	}
	if err := x.index.Index(ctx, tenant, docs); err != nil {
		return fmt.Errorf("index %d messages: %w", len(docs), err)
	}
	return nil
}
