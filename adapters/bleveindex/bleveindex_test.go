package bleveindex

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/imdhq/imd/core/domain/fulltext"
	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestSearchIndexContract(t *testing.T) {
	contract.SearchIndex(t, func(t *testing.T) ports.SearchIndex {
		x, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	})
}

// TestOlderShapesContract: an index created before the seq or the creation time became
// keywords keeps the shape it was created with, and everything still works on it.
func TestOlderShapesContract(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shape   shape
		mapping func() *mapping.IndexMappingImpl
	}{
		{"numeric seq", numericSeq, numericSeqMapping},
		{"numeric time", numericTime, numericTimeMapping},
		{"keyword time with term vectors and the text's doc values", keywordTime, func() *mapping.IndexMappingImpl { return withBleveDefaults(docMapping()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			contract.SearchIndex(t, func(t *testing.T) ports.SearchIndex {
				x := createdWith(t, tc.mapping, "t1", "t2")
				t.Cleanup(func() { x.Close() })
				if idx, err := x.of("t1"); err != nil || idx.shape != tc.shape {
					t.Fatalf("an index of the %s shape opened as %+v, %v", tc.name, idx, err)
				}
				return x
			})
		})
	}
}

// createdWith is an Index over a new directory where the tenants' indexes were created with
// the given mapping, as by an older build.
func createdWith(tb testing.TB, m func() *mapping.IndexMappingImpl, tenants ...string) *Index {
	tb.Helper()
	dir := tb.TempDir()
	for _, tenant := range tenants {
		idx, err := bleve.New(filepath.Join(dir, tenant+".bleve"), m())
		if err != nil {
			tb.Fatal(err)
		}
		if err := idx.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	x, err := New(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return x
}

// numericSeqMapping is the mapping indexes were created with before fieldOrder and without
// the _all field disabled.
func numericSeqMapping() *mapping.IndexMappingImpl {
	_, exact, num := fieldMappings()
	m := indexMapping(exact)
	m.DefaultMapping.AddFieldMappingsAt(fieldCreated, num)
	m.DefaultMapping.AddFieldMappingsAt(fieldSeq, num)
	return withBleveDefaults(m)
}

// numericTimeMapping is the mapping indexes were created with before timeFields.
func numericTimeMapping() *mapping.IndexMappingImpl {
	_, exact, num := fieldMappings()
	m := indexMapping(exact)
	m.DefaultMapping.AddFieldMappingsAt(fieldCreated, num)
	m.DefaultMapping.AddFieldMappingsAt(fieldOrder, exact)
	m.DefaultMapping.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping())
	return withBleveDefaults(m)
}

// withBleveDefaults turns back on what indexes were created with before change 46
// (docs/BENCHMARKS.md): the text's doc values and every keyword's term vectors, Bleve's
// defaults.
func withBleveDefaults(m *mapping.IndexMappingImpl) *mapping.IndexMappingImpl {
	for _, fields := range m.DefaultMapping.Properties {
		for _, f := range fields.Fields {
			if f.Type != "text" {
				continue
			}
			if f.Analyzer == keyword.Name {
				f.IncludeTermVectors = true
			} else {
				f.DocValues = true
			}
		}
	}
	return m
}

// TestNewIndexWritesOnlyWhatSearchReads: a new index writes no term vectors, and doc values
// only for what a search sorts by (the creation time and the order), so that a document costs
// no more than a search needs (change 46); an index made so still sorts newest first
// (contract).
func TestNewIndexWritesOnlyWhatSearchReads(t *testing.T) {
	m := docMapping()
	sorted := map[string]bool{timeFields[0]: true, fieldOrder: true}
	mapped := 0
	for name, fields := range m.DefaultMapping.Properties {
		for _, f := range fields.Fields {
			mapped++
			if f.IncludeTermVectors || f.DocValues != sorted[name] || f.Store || f.IncludeInAll {
				t.Errorf("field %s: term vectors %v, doc values %v, stored %v, in _all %v; want doc values %v only", name, f.IncludeTermVectors, f.DocValues, f.Store, f.IncludeInAll, sorted[name])
			}
		}
	}
	if mapped != 8 {
		t.Errorf("%d fields mapped, want 8: text, topic, month, the four times and order", mapped)
	}
}

// TestIndexSurvivesReopening: the index lives on disk; a restarted server finds what it
// indexed before.
func TestIndexSurvivesReopening(t *testing.T) {
	dir, ctx := t.TempDir(), context.Background()
	x, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	doc := fulltext.Doc{Topic: "grp_1", Seq: 1, Month: 203101, Text: "持久化的索引", CreatedAt: time.Now()}
	if err := x.Index(ctx, "t1", []fulltext.Doc{doc}); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	y, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if idx, err := y.of("t1"); err != nil || idx.shape != keywordTime {
		t.Fatalf("a new index reopened as %+v, %v", idx, err)
	}
	hits, err := y.Search(ctx, "t1", fulltext.Query{Text: "索引", Limit: 5})
	if err != nil || len(hits) != 1 || hits[0] != (fulltext.Hit{Topic: "grp_1", Seq: 1}) {
		t.Fatalf("after reopening: %v %v", hits, err)
	}
}

// TestSecondProcessFailsInsteadOfHanging: an index another process holds is refused after a
// bounded wait.
func TestSecondProcessFailsInsteadOfHanging(t *testing.T) {
	dir, ctx := t.TempDir(), context.Background()
	first, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	doc := fulltext.Doc{Topic: "grp_1", Seq: 1, Month: 203101, Text: "x", CreatedAt: time.Now()}
	if err := first.Index(ctx, "t1", []fulltext.Doc{doc}); err != nil {
		t.Fatal(err)
	}
	second, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	start := time.Now()
	if err := second.Index(ctx, "t1", []fulltext.Doc{doc}); err == nil {
		t.Fatal("a second process opened a held index")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("refusing took %v", took)
	}
}
