package migration

import (
	"errors"
	"iter"
	"slices"
	"testing"

	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/month"
)

const m0 = month.Month(203101)

func rowsOf(rows ...legacy.Row) iter.Seq2[legacy.Row, error] {
	return func(yield func(legacy.Row, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func row(topic string, seq int64, content string) legacy.Row {
	return legacy.Row{Topic: topic, Seq: seq, MsgID: 1000 + seq, Status: "normal", Content: []byte(content), Version: 1}
}

func TestCompare(t *testing.T) {
	recalled := row("grp_1", 2, "")
	recalled.Status, recalled.Content, recalled.Version = "recalled", nil, 2
	empty := row("grp_1", 2, "")
	cases := []struct {
		name         string
		inv          []legacy.TopicMonth
		left, right  []legacy.Row
		wantModified int64
		want         []legacy.Mismatch
	}{
		{
			name:  "identical",
			inv:   []legacy.TopicMonth{{Topic: "grp_1", Rows: 3}},
			left:  []legacy.Row{row("grp_1", 1, "a"), row("grp_1", 2, "b"), row("grp_1", 3, "c")},
			right: []legacy.Row{row("grp_1", 1, "a"), row("grp_1", 2, "b"), row("grp_1", 3, "c")},
		},
		{
			name:  "missing runs are coalesced",
			inv:   []legacy.TopicMonth{{Topic: "grp_1", Rows: 4}},
			left:  []legacy.Row{row("grp_1", 1, "a"), row("grp_1", 2, "b"), row("grp_1", 3, "c"), row("grp_1", 4, "d")},
			right: []legacy.Row{row("grp_1", 1, "a"), row("grp_1", 4, "d")},
			want:  []legacy.Mismatch{{Topic: "grp_1", Month: m0, Kind: legacy.Missing, FromSeq: 2, ToSeq: 3, Rows: 2}},
		},
		{
			name:  "content differs",
			inv:   []legacy.TopicMonth{{Topic: "grp_1", Rows: 2}},
			left:  []legacy.Row{row("grp_1", 1, "a"), row("grp_1", 2, "b")},
			right: []legacy.Row{row("grp_1", 1, "a"), row("grp_1", 2, "B")},
			want:  []legacy.Mismatch{{Topic: "grp_1", Month: m0, Kind: legacy.Differs, FromSeq: 2, ToSeq: 2, Rows: 1}},
		},
		{
			name:  "NULL content is not empty content",
			inv:   []legacy.TopicMonth{{Topic: "grp_1", Rows: 1}},
			left:  []legacy.Row{{Topic: "grp_1", Seq: 2, MsgID: 1002, Status: "normal", Version: 1}},
			right: []legacy.Row{empty},
			want:  []legacy.Mismatch{{Topic: "grp_1", Month: m0, Kind: legacy.Differs, FromSeq: 2, ToSeq: 2, Rows: 1}},
		},
		{
			name:         "a later version written through imd is accepted",
			inv:          []legacy.TopicMonth{{Topic: "grp_1", Rows: 2}},
			left:         []legacy.Row{row("grp_1", 1, "a"), row("grp_1", 2, "b")},
			right:        []legacy.Row{row("grp_1", 1, "a"), recalled},
			wantModified: 1,
		},
		{
			name:  "extra rows and an inventory the legacy table no longer matches",
			inv:   []legacy.TopicMonth{{Topic: "grp_1", MinSeq: 1, MaxSeq: 2, Rows: 2}, {Topic: "grp_2", MinSeq: 5, MaxSeq: 9, Rows: 5}},
			left:  []legacy.Row{row("grp_1", 1, "a")},
			right: []legacy.Row{row("grp_1", 1, "a"), row("grp_1", 2, "b")},
			want: []legacy.Mismatch{
				{Topic: "grp_1", Month: m0, Kind: legacy.Extra, FromSeq: 2, ToSeq: 2, Rows: 1},
				{Topic: "grp_1", Month: m0, Kind: legacy.LegacyChanged, FromSeq: 1, ToSeq: 2, Rows: -1},
				{Topic: "grp_2", Month: m0, Kind: legacy.LegacyChanged, FromSeq: 5, ToSeq: 9, Rows: -5},
			},
		},
		{
			name:  "topics in byte order, interleaved",
			inv:   []legacy.TopicMonth{{Topic: "grp_1", Rows: 1}, {Topic: "p2p_1_20", Rows: 1}, {Topic: "p2p_10_2", Rows: 1}},
			left:  []legacy.Row{row("grp_1", 1, "a"), row("p2p_10_2", 1, "x"), row("p2p_1_20", 1, "y")},
			right: []legacy.Row{row("grp_1", 1, "a"), row("p2p_10_2", 1, "x"), row("p2p_1_20", 1, "y")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.inv {
				tc.inv[i].Month = m0
			}
			results, err := Compare(m0, tc.inv, rowsOf(tc.left...), rowsOf(tc.right...))
			if err != nil {
				t.Fatal(err)
			}
			var got []legacy.Mismatch
			var modified int64
			for _, r := range results {
				got = append(got, r.Mismatches...)
				modified += r.Modified
			}
			if !slices.Equal(got, tc.want) || modified != tc.wantModified {
				t.Fatalf("mismatches %+v modified %d, want %+v modified %d", got, modified, tc.want, tc.wantModified)
			}
		})
	}
}

func TestCompareReportsSeqRanges(t *testing.T) {
	left := []legacy.Row{row("grp_1", 1, "a"), row("grp_1", 2, "b"), row("grp_1", 3, "c")}
	right := []legacy.Row{row("grp_1", 1, "a"), row("grp_1", 2, "b"), row("grp_1", 3, "c"), row("grp_1", 4, "d")}
	results, err := Compare(m0, []legacy.TopicMonth{{Topic: "grp_1", Month: m0, Rows: 3}}, rowsOf(left...), rowsOf(right...))
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	if r.LegacyHash == r.MonthHash || len(r.LegacyHash) != 64 {
		t.Fatalf("hashes %q and %q of different rows", r.LegacyHash, r.MonthHash)
	}
	same, err := Compare(m0, nil, rowsOf(left...), rowsOf(left...))
	if err != nil || same[0].LegacyHash != same[0].MonthHash {
		t.Fatalf("hashes of equal rows differ: %+v, %v", same, err)
	}
	if r.LegacyRows != 3 || r.MonthRows != 4 || r.LegacyMinSeq != 1 || r.LegacyMaxSeq != 3 || r.MonthMinSeq != 1 || r.MonthMaxSeq != 4 {
		t.Fatalf("result %+v", r)
	}
}

func TestCompareStopsOnStreamErrors(t *testing.T) {
	broken := func(yield func(legacy.Row, error) bool) {
		if yield(row("grp_1", 1, "a"), nil) {
			yield(legacy.Row{}, errors.New("connection lost"))
		}
	}
	for name, streams := range map[string][2]iter.Seq2[legacy.Row, error]{
		"legacy": {broken, rowsOf(row("grp_1", 1, "a"), row("grp_1", 2, "b"))},
		"month":  {rowsOf(row("grp_1", 1, "a"), row("grp_1", 2, "b")), broken},
	} {
		if _, err := Compare(m0, nil, streams[0], streams[1]); err == nil {
			t.Errorf("%s stream error was not returned", name)
		}
	}
}
