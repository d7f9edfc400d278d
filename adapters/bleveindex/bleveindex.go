// Package bleveindex is ports.SearchIndex on Bleve: one on-disk index per tenant under a
// directory, text analyzed by Bleve's CJK analyzer (Unicode word segmentation, width folding,
// lower case, and bigrams of Chinese, Japanese and Korean runs), so both "Archive" and "归档"
// are found. Documents are keyed topic/seq and keep only what search needs: text, topic,
// month, creation time and the seq as a sort key.
package bleveindex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/imdhq/imd/core/domain/fulltext"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// Field names of an indexed document.
const (
	fieldText    = "text"
	fieldTopic   = "topic"
	fieldMonth   = "month"
	fieldCreated = "created" // Unix ms, for ranges and newest-first order
	// fieldOrder is the seq as a fixed-width decimal keyword: it only breaks ties of created in
	// the sort, which one term does as well as the 17 a numeric field writes.
	fieldOrder = "order"
	// fieldSeq is the numeric seq of the indexes created before fieldOrder; they keep it.
	fieldSeq = "seq"
)

// orderWidth is the digits of the largest int64, so the keyword sorts as the number does.
const orderWidth = 19

// removeBatch bounds the documents one RemoveMonth round deletes.
const removeBatch = 1000

// boltTimeout bounds the wait for another process's lock on a tenant's index (two nodes given
// one directory): such a node fails its calls on that index instead of hanging in them.
const boltTimeout = "2s"

// persistNap is how long Bleve's persister waits after writing a snapshot to disk: writes
// return once searchable (unsafe_batch), their in-memory segments are merged while it naps,
// and the merged one is written once. Waiting for each write's own file instead cost ~30 %
// more CPU per document (docs/BENCHMARKS.md, change 19). A crash loses at most the last nap's
// documents on top of the indexer's queue; the backfill (reindex) restores both.
const persistNap = 1000 // ms

// persistWait bounds how long Close waits for the last writes to be persisted.
const persistWait = 10 * time.Second

// Index keeps one Bleve index per tenant, opened on first use.
type Index struct {
	dir string

	mu      sync.Mutex
	tenants map[string]tenantIndex
	closed  bool
}

// tenantIndex is an open index and the shape of its documents: an index keeps the mapping it
// was created with.
type tenantIndex struct {
	bleve.Index
	numericSeq bool // created before fieldOrder: the seq is the numeric fieldSeq
	// unpersisted counts the writes Bleve has not yet persisted.
	unpersisted *sync.WaitGroup
}

var _ ports.SearchIndex = (*Index)(nil)

// New returns an index rooted at dir (created if missing).
func New(dir string) (*Index, error) {
	if dir == "" {
		return nil, errors.New("bleveindex: directory is required")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("bleveindex: %w", err)
	}
	return &Index{dir: dir, tenants: map[string]tenantIndex{}}, nil
}

// docMapping is the one document type: analyzed text, exact topic, month and order, numeric
// time. No query reads the composite _all field (every query names its field), so none is
// written: it cost a visit of every field per document.
func docMapping() *mapping.IndexMappingImpl {
	_, exact, _ := fieldMappings()
	return indexMapping(func(doc *mapping.DocumentMapping) {
		doc.AddFieldMappingsAt(fieldOrder, exact)
		doc.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping())
	})
}

// fieldMappings are the kinds of field a document has, none of them stored: text analyzed by
// the CJK analyzer, exact keywords, numbers.
func fieldMappings() (text, exact, num *mapping.FieldMapping) {
	text = bleve.NewTextFieldMapping()
	text.Analyzer = cjk.AnalyzerName
	text.Store, text.IncludeInAll, text.IncludeTermVectors = false, false, false
	exact = bleve.NewKeywordFieldMapping()
	exact.Analyzer = keyword.Name
	exact.Store, exact.IncludeInAll = false, false
	num = bleve.NewNumericFieldMapping()
	num.Store, num.IncludeInAll = false, false
	return text, exact, num
}

// indexMapping is an index of the one document type, nothing dynamic: the fields every index
// has (text, topic, month, creation time), then what the given version adds.
func indexMapping(version func(doc *mapping.DocumentMapping)) *mapping.IndexMappingImpl {
	text, exact, num := fieldMappings()
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fieldText, text)
	doc.AddFieldMappingsAt(fieldTopic, exact)
	doc.AddFieldMappingsAt(fieldMonth, exact)
	doc.AddFieldMappingsAt(fieldCreated, num)
	version(doc)
	m := bleve.NewIndexMapping()
	m.DefaultMapping = doc
	m.DefaultAnalyzer = cjk.AnalyzerName
	m.StoreDynamic, m.IndexDynamic = false, false
	return m
}

// of returns the tenant's index, opening or creating it.
func (x *Index) of(name string) (tenantIndex, error) {
	if !tenant.Valid(name) {
		return tenantIndex{}, fmt.Errorf("bleveindex: invalid tenant %q", name)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return tenantIndex{}, errors.New("bleveindex: closed")
	}
	if idx, ok := x.tenants[name]; ok {
		return idx, nil
	}
	path := filepath.Join(x.dir, name+".bleve")
	cfg := map[string]any{
		"bolt_timeout": boltTimeout, "unsafe_batch": true,
		"scorchPersisterOptions": map[string]any{"PersisterNapTimeMSec": persistNap},
	}
	idx, err := bleve.OpenUsing(path, cfg)
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
		idx, err = bleve.NewUsing(path, docMapping(), bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, cfg)
	}
	if err != nil {
		return tenantIndex{}, fmt.Errorf("open search index of %s: %w", name, err)
	}
	t := tenantIndex{Index: idx, numericSeq: idx.Mapping().FieldMappingForPath(fieldOrder).Type == "", unpersisted: new(sync.WaitGroup)}
	x.tenants[name] = t
	return t, nil
}

func docID(topic string, seq int64) string { return topic + "/" + strconv.FormatInt(seq, 10) }

type document struct {
	Text    string  `json:"text"`
	Topic   string  `json:"topic"`
	Month   string  `json:"month"`
	Created float64 `json:"created"`
	Order   string  `json:"order"`
}

// legacyDocument is the document of an index with a numeric seq.
type legacyDocument struct {
	Text    string  `json:"text"`
	Topic   string  `json:"topic"`
	Month   string  `json:"month"`
	Created float64 `json:"created"`
	Seq     float64 `json:"seq"`
}

// documentOf is d in the shape idx was created with.
func (idx tenantIndex) documentOf(d fulltext.Doc) any {
	created := float64(d.CreatedAt.UnixMilli())
	if idx.numericSeq {
		return legacyDocument{Text: d.Text, Topic: d.Topic, Month: d.Month.String(), Created: created, Seq: float64(d.Seq)}
	}
	return document{Text: d.Text, Topic: d.Topic, Month: d.Month.String(), Created: created, Order: fmt.Sprintf("%0*d", orderWidth, d.Seq)}
}

// sortOrder is newest first: by creation time, then seq, then id.
func (idx tenantIndex) sortOrder() search.SortOrder {
	tie := &search.SortField{Field: fieldOrder, Desc: true, Type: search.SortFieldAsString}
	if idx.numericSeq {
		tie = &search.SortField{Field: fieldSeq, Desc: true, Type: search.SortFieldAsNumber}
	}
	return search.SortOrder{
		&search.SortField{Field: fieldCreated, Desc: true, Type: search.SortFieldAsNumber},
		tie,
		&search.SortDocID{Desc: true},
	}
}

// Index writes the documents in one batch.
func (x *Index) Index(ctx context.Context, tenantName string, docs []fulltext.Doc) error {
	idx, err := x.of(tenantName)
	if err != nil {
		return err
	}
	b := idx.NewBatch()
	for _, d := range docs {
		if err := b.Index(docID(d.Topic, d.Seq), idx.documentOf(d)); err != nil {
			return fmt.Errorf("index %s seq %d: %w", d.Topic, d.Seq, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := x.batch(idx, b); err != nil {
		return fmt.Errorf("index %d documents of %s: %w", len(docs), tenantName, err)
	}
	return nil
}

// Remove deletes the documents in one batch.
func (x *Index) Remove(ctx context.Context, tenantName string, keys []fulltext.Key) error {
	idx, err := x.of(tenantName)
	if err != nil {
		return err
	}
	b := idx.NewBatch()
	for _, k := range keys {
		b.Delete(docID(k.Topic, k.Seq))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := x.batch(idx, b); err != nil {
		return fmt.Errorf("remove %d documents of %s: %w", len(keys), tenantName, err)
	}
	return nil
}

// RemoveMonth finds the month's documents in rounds and deletes them.
func (x *Index) RemoveMonth(ctx context.Context, tenantName string, m month.Month) (int, error) {
	idx, err := x.of(tenantName)
	if err != nil {
		return 0, err
	}
	q := bleve.NewTermQuery(m.String())
	q.SetField(fieldMonth)
	removed := 0
	for {
		res, err := idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(q, removeBatch, 0, false))
		if err != nil {
			return removed, fmt.Errorf("find documents of %s: %w", m, err)
		}
		if len(res.Hits) == 0 {
			return removed, nil
		}
		b := idx.NewBatch()
		for _, h := range res.Hits {
			b.Delete(h.ID)
		}
		if err := x.batch(idx, b); err != nil {
			return removed, fmt.Errorf("remove documents of %s: %w", m, err)
		}
		removed += len(res.Hits)
	}
}

// batch writes b, counted until Bleve calls back that it is persisted (a failed write may or
// may not call back). The count is taken under the lock Close holds, so Close never waits on
// a count that may still grow.
func (x *Index) batch(idx tenantIndex, b *bleve.Batch) error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return errors.New("bleveindex: closed")
	}
	idx.unpersisted.Add(1)
	x.mu.Unlock()
	persisted := sync.OnceFunc(idx.unpersisted.Done)
	b.SetPersistedCallback(func(error) { persisted() })
	err := idx.Batch(b)
	if err != nil {
		persisted()
	}
	return err
}

// Search matches every analyzed term of the text (so a Chinese phrase matches by all of its
// bigrams), within the topics and time range, newest first.
func (x *Index) Search(ctx context.Context, tenantName string, q fulltext.Query) ([]fulltext.Hit, error) {
	idx, err := x.of(tenantName)
	if err != nil {
		return nil, err
	}
	text := bleve.NewMatchQuery(q.Text)
	text.SetField(fieldText)
	text.Analyzer = cjk.AnalyzerName
	text.SetOperator(query.MatchQueryOperatorAnd)
	must := []query.Query{text}
	if q.Topics != nil {
		topics := make([]query.Query, len(q.Topics))
		for i, t := range q.Topics {
			tq := bleve.NewTermQuery(t)
			tq.SetField(fieldTopic)
			topics[i] = tq
		}
		must = append(must, bleve.NewDisjunctionQuery(topics...))
	}
	if !q.From.IsZero() || !q.To.IsZero() {
		var lo, hi *float64
		if !q.From.IsZero() {
			v := float64(q.From.UnixMilli())
			lo = &v
		}
		if !q.To.IsZero() {
			v := float64(q.To.UnixMilli())
			hi = &v
		}
		inclusive, exclusive := true, false
		r := bleve.NewNumericRangeInclusiveQuery(lo, hi, &inclusive, &exclusive)
		r.SetField(fieldCreated)
		must = append(must, r)
	}
	req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(must...), q.Limit, q.Offset, false)
	req.SortByCustom(idx.sortOrder())
	res, err := idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", tenantName, err)
	}
	hits := make([]fulltext.Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		i := strings.LastIndexByte(h.ID, '/')
		seq, err := strconv.ParseInt(h.ID[i+1:], 10, 64)
		if i < 0 || err != nil {
			return nil, fmt.Errorf("search %s: bad document id %q", tenantName, h.ID)
		}
		hits = append(hits, fulltext.Hit{Topic: h.ID[:i], Seq: seq})
	}
	return hits, nil
}

// Close closes every open index.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closed = true
	var errs []error
	for name, idx := range x.tenants {
		if !waited(idx.unpersisted, persistWait) {
			errs = append(errs, fmt.Errorf("search index of %s: the last writes were not persisted within %s; a reindex restores them", name, persistWait))
		}
		if err := idx.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close search index of %s: %w", name, err))
		}
	}
	x.tenants = map[string]tenantIndex{}
	return errors.Join(errs...)
}

// waited reports whether wg reached zero within limit.
func waited(wg *sync.WaitGroup, limit time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	}
}
