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
	fieldText  = "text"
	fieldTopic = "topic"
	fieldMonth = "month"
	// fieldOrder is the seq as a fixed-width decimal keyword: it only breaks ties of the creation
	// time in the sort, which one term does as well as the 17 a numeric field writes.
	fieldOrder = "order"
	// fieldCreated is the creation time in Unix ms as a number, in the indexes created before
	// timeFields; they keep it.
	fieldCreated = "created"
	// fieldSeq is the numeric seq of the indexes created before fieldOrder; they keep it.
	fieldSeq = "seq"
)

// timeFields hold a document's creation time as fixed-width decimal keywords, one term each:
// the Unix ms, then the ms divided by 10^3, 10^6 and 10^9. The first sorts newest first; a
// time range is a few term ranges over them (timeRange). A numeric field writes 17 terms for
// the same (docs/BENCHMARKS.md, change 43).
var timeFields = [...]string{"at", "at_1e3", "at_1e6", "at_1e9"}

// timeStep is how much coarser each of timeFields is than the one before: timeStepDigits
// decimal digits.
const (
	timeStep       = 1000
	timeStepDigits = 3
)

// timeWidth is the digits of a creation time in Unix ms, enough until the year 2286; maxTime
// is the latest time a keyword holds.
const (
	timeWidth = 13
	maxTime   = 1e13 - 1
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
	shape shape
	// unpersisted counts the writes Bleve has not yet persisted.
	unpersisted *sync.WaitGroup
}

// shape is how an index's documents hold the creation time and the seq, by when it was created.
type shape int

const (
	numericSeq  shape = iota // numeric fieldCreated and fieldSeq
	numericTime              // numeric fieldCreated, keyword fieldOrder
	keywordTime              // keyword timeFields and fieldOrder: what a new index gets
)

// shapeOf tells an index's shape by the fields its mapping has.
func shapeOf(m mapping.IndexMapping) shape {
	switch {
	case m.FieldMappingForPath(timeFields[0]).Type != "":
		return keywordTime
	case m.FieldMappingForPath(fieldOrder).Type != "":
		return numericTime
	default:
		return numericSeq
	}
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

// docMapping is the one document type of a new index: analyzed text, exact topic, month,
// time and order. No query reads the composite _all field (every query names its field), so
// none is written: it cost a visit of every field per document. Only what a search sorts by
// keeps doc values, and no field keeps term vectors.
func docMapping() *mapping.IndexMappingImpl {
	_, exact, _ := fieldMappings()
	bare := *exact // an exact keyword that nothing sorts by
	bare.DocValues = false
	m := indexMapping(&bare)
	doc := m.DefaultMapping
	doc.AddFieldMappingsAt(timeFields[0], exact)
	for _, f := range timeFields[1:] {
		doc.AddFieldMappingsAt(f, &bare)
	}
	doc.AddFieldMappingsAt(fieldOrder, exact)
	doc.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping())
	return m
}

// fieldMappings are the kinds of field a document has, none of them stored: text analyzed by
// the CJK analyzer, exact keywords, numbers. Term vectors (positions, for phrases and
// highlights) and the text's doc values (its terms per document, for sorting or faceting by
// it) are written by Bleve's defaults but read by no search, which matches terms and sorts by
// time and order: they cost a new index about a tenth of its CPU per document and half its
// size on disk (docs/BENCHMARKS.md, change 46). An index keeps the mapping it was made with.
func fieldMappings() (text, exact, num *mapping.FieldMapping) {
	text = bleve.NewTextFieldMapping()
	text.Analyzer = cjk.AnalyzerName
	text.Store, text.IncludeInAll, text.IncludeTermVectors, text.DocValues = false, false, false, false
	exact = bleve.NewKeywordFieldMapping()
	exact.Analyzer = keyword.Name
	exact.Store, exact.IncludeInAll, exact.IncludeTermVectors = false, false, false
	num = bleve.NewNumericFieldMapping()
	num.Store, num.IncludeInAll = false, false
	return text, exact, num
}

// indexMapping is an index of the one document type, nothing dynamic, with the fields every
// shape has (text, and topic and month as exact keywords); the shape adds the rest.
func indexMapping(exact *mapping.FieldMapping) *mapping.IndexMappingImpl {
	text, _, _ := fieldMappings()
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fieldText, text)
	doc.AddFieldMappingsAt(fieldTopic, exact)
	doc.AddFieldMappingsAt(fieldMonth, exact)
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
	t := tenantIndex{Index: idx, shape: shapeOf(idx.Mapping()), unpersisted: new(sync.WaitGroup)}
	x.tenants[name] = t
	return t, nil
}

func docID(topic string, seq int64) string { return topic + "/" + strconv.FormatInt(seq, 10) }

type document struct {
	Text  string `json:"text"`
	Topic string `json:"topic"`
	Month string `json:"month"`
	At    string `json:"at"`
	At1e3 string `json:"at_1e3"`
	At1e6 string `json:"at_1e6"`
	At1e9 string `json:"at_1e9"`
	Order string `json:"order"`
}

// numericTimeDocument is the document of an index with a numeric creation time.
type numericTimeDocument struct {
	Text    string  `json:"text"`
	Topic   string  `json:"topic"`
	Month   string  `json:"month"`
	Created float64 `json:"created"`
	Order   string  `json:"order"`
}

// numericSeqDocument is the document of an index with a numeric seq.
type numericSeqDocument struct {
	Text    string  `json:"text"`
	Topic   string  `json:"topic"`
	Month   string  `json:"month"`
	Created float64 `json:"created"`
	Seq     float64 `json:"seq"`
}

// documentOf is d in the shape idx was created with.
func (idx tenantIndex) documentOf(d fulltext.Doc) any {
	ms := min(max(d.CreatedAt.UnixMilli(), 0), maxTime)
	switch idx.shape {
	case numericSeq:
		return numericSeqDocument{Text: d.Text, Topic: d.Topic, Month: d.Month.String(), Created: float64(ms), Seq: float64(d.Seq)}
	case numericTime:
		return numericTimeDocument{Text: d.Text, Topic: d.Topic, Month: d.Month.String(), Created: float64(ms), Order: padded(d.Seq, orderWidth)}
	}
	at := timeTerms(ms)
	return document{
		Text: d.Text, Topic: d.Topic, Month: d.Month.String(),
		At: at[0], At1e3: at[1], At1e6: at[2], At1e9: at[3],
		Order: padded(d.Seq, orderWidth),
	}
}

// timeTerms are the keywords of timeFields for a creation time of ms.
func timeTerms(ms int64) (terms [len(timeFields)]string) {
	for level := range terms {
		terms[level] = timeTerm(level, ms)
		ms /= timeStep
	}
	return terms
}

// padded is v in decimal, zero-padded to width digits, so that keywords sort as numbers do.
func padded(v int64, width int) string {
	s := strconv.FormatInt(v, 10)
	if len(s) >= width {
		return s
	}
	return strings.Repeat("0", width-len(s)) + s
}

// timeTerm is the keyword of timeFields[level] for v, a time already divided to that level:
// each level has timeStepDigits digits fewer than the one before.
func timeTerm(level int, v int64) string { return padded(v, timeWidth-timeStepDigits*level) }

// timeRange matches lo ≤ creation time ≤ hi (Unix ms, within 0…maxTime) in an index of the
// keyword shape: the finest field covers the ms up to the first whole second and after the
// last, the next field the seconds up to the first and after the last whole 1,000 s, and so
// on, and the coarsest field what is left between. That is at most seven term ranges, each
// over at most 999 distinct terms and only those some document has.
func timeRange(lo, hi int64) query.Query {
	var parts []query.Query
	unit := int64(1)
	for level := 0; lo <= hi; level++ {
		if level == len(timeFields)-1 {
			parts = append(parts, termRange(level, lo/unit, hi/unit))
			break
		}
		next := unit * timeStep
		if lo%next != 0 {
			end := min(hi, (lo/next+1)*next-1)
			parts = append(parts, termRange(level, lo/unit, end/unit))
			lo = end + 1
		}
		if lo <= hi && (hi+1)%next != 0 {
			start := max(lo, (hi+1)/next*next)
			parts = append(parts, termRange(level, start/unit, hi/unit))
			hi = start - 1
		}
		unit = next
	}
	if len(parts) == 0 {
		return bleve.NewMatchNoneQuery()
	}
	return bleve.NewDisjunctionQuery(parts...)
}

// termRange matches the documents whose timeFields[level] is within lo…hi.
func termRange(level int, lo, hi int64) query.Query {
	inclusive := true
	r := bleve.NewTermRangeInclusiveQuery(timeTerm(level, lo), timeTerm(level, hi), &inclusive, &inclusive)
	r.SetField(timeFields[level])
	return r
}

// sortOrder is newest first: by creation time, then seq, then id.
func (idx tenantIndex) sortOrder() search.SortOrder {
	created := &search.SortField{Field: timeFields[0], Desc: true, Type: search.SortFieldAsString}
	tie := &search.SortField{Field: fieldOrder, Desc: true, Type: search.SortFieldAsString}
	switch idx.shape {
	case numericSeq:
		created = &search.SortField{Field: fieldCreated, Desc: true, Type: search.SortFieldAsNumber}
		tie = &search.SortField{Field: fieldSeq, Desc: true, Type: search.SortFieldAsNumber}
	case numericTime:
		created = &search.SortField{Field: fieldCreated, Desc: true, Type: search.SortFieldAsNumber}
	}
	return search.SortOrder{created, tie, &search.SortDocID{Desc: true}}
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
		must = append(must, idx.createdWithin(q.From, q.To))
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

// createdWithin matches from ≤ creation time < to, each bound only when set.
func (idx tenantIndex) createdWithin(from, to time.Time) query.Query {
	lo, hi := int64(0), int64(maxTime)
	if !from.IsZero() {
		lo = max(from.UnixMilli(), 0)
	}
	if !to.IsZero() {
		hi = min(to.UnixMilli()-1, maxTime)
	}
	if idx.shape == keywordTime {
		return timeRange(lo, hi)
	}
	flo, fhi, inclusive := float64(lo), float64(hi), true
	r := bleve.NewNumericRangeInclusiveQuery(&flo, &fhi, &inclusive, &inclusive)
	r.SetField(fieldCreated)
	return r
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
