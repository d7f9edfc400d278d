package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/imdhq/imd/core/domain/fulltext"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// SearchIndex is ports.SearchIndex in memory, analyzing text like the Bleve adapter's CJK
// analyzer: lower-cased words, and bigrams of runs of Han, Hiragana, Katakana and Hangul
// (a lone character stays a unigram). A query matches a document holding all of its terms.
type SearchIndex struct {
	mu   sync.Mutex
	docs map[string]map[fulltext.Key]indexedDoc
}

type indexedDoc struct {
	doc   fulltext.Doc
	terms map[string]bool
}

var _ ports.SearchIndex = (*SearchIndex)(nil)

// NewSearchIndex returns an empty index.
func NewSearchIndex() *SearchIndex {
	return &SearchIndex{docs: map[string]map[fulltext.Key]indexedDoc{}}
}

func (x *SearchIndex) Index(_ context.Context, tenant string, docs []fulltext.Doc) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	t, ok := x.docs[tenant]
	if !ok {
		t = map[fulltext.Key]indexedDoc{}
		x.docs[tenant] = t
	}
	for _, d := range docs {
		terms := map[string]bool{}
		for _, term := range analyze(d.Text) {
			terms[term] = true
		}
		t[fulltext.Key{Topic: d.Topic, Seq: d.Seq}] = indexedDoc{doc: d, terms: terms}
	}
	return nil
}

func (x *SearchIndex) Remove(_ context.Context, tenant string, keys []fulltext.Key) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, k := range keys {
		delete(x.docs[tenant], k)
	}
	return nil
}

func (x *SearchIndex) RemoveMonth(_ context.Context, tenant string, m month.Month) (int, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for k, d := range x.docs[tenant] {
		if d.doc.Month == m {
			delete(x.docs[tenant], k)
			n++
		}
	}
	return n, nil
}

func (x *SearchIndex) Search(_ context.Context, tenant string, q fulltext.Query) ([]fulltext.Hit, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	want := analyze(q.Text)
	var found []fulltext.Doc
	for _, d := range x.docs[tenant] {
		if len(want) == 0 || (q.Topics != nil && !slices.Contains(q.Topics, d.doc.Topic)) ||
			(!q.From.IsZero() && d.doc.CreatedAt.Before(q.From)) || (!q.To.IsZero() && !d.doc.CreatedAt.Before(q.To)) {
			continue
		}
		all := true
		for _, term := range want {
			all = all && d.terms[term]
		}
		if all {
			found = append(found, d.doc)
		}
	}
	slices.SortFunc(found, func(a, b fulltext.Doc) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.Seq, a.Seq), cmp.Compare(b.Topic, a.Topic))
	})
	found = found[min(q.Offset, len(found)):]
	found = found[:min(q.Limit, len(found))]
	hits := make([]fulltext.Hit, len(found))
	for i, d := range found {
		hits[i] = fulltext.Hit{Topic: d.Topic, Seq: d.Seq}
	}
	return hits, nil
}

// analyze splits text into lower-cased words; a run of CJK characters becomes its bigrams.
func analyze(text string) []string {
	var terms []string
	var run []rune
	cjkRun := false
	flush := func() {
		switch {
		case len(run) == 0:
		case cjkRun && len(run) == 1:
			terms = append(terms, string(run))
		case cjkRun:
			for i := 0; i+1 < len(run); i++ {
				terms = append(terms, string(run[i:i+2]))
			}
		default:
			terms = append(terms, strings.ToLower(string(run)))
		}
		run = run[:0]
	}
	for _, r := range text {
		isCJK := unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
		isWord := isCJK || unicode.IsLetter(r) || unicode.IsDigit(r)
		if !isWord || (len(run) > 0 && isCJK != cjkRun) {
			flush()
		}
		if isWord {
			cjkRun = isCJK
			run = append(run, r)
		}
	}
	flush()
	return terms
}
