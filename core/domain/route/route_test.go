package route

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/month"
)

// twoMonths is the example of seed 000 §3.3: 202609 holds 1..10086, 202610 holds 10087..12000.
var twoMonths = Normalize([]Segment{
	{Month: 202610, MinSeq: 10087, MaxSeq: 12000, Count: 1914},
	{Month: 202609, MinSeq: 1, MaxSeq: 10086, Count: 10086},
})

// gapped has a month without messages of this topic (202611) between two that have some.
var gapped = Normalize([]Segment{
	{Month: 202610, MinSeq: 1, MaxSeq: 10},
	{Month: 202612, MinSeq: 11, MaxSeq: 20},
	{Month: 202701, MinSeq: 21, MaxSeq: 21},
})

func TestLocate(t *testing.T) {
	tests := []struct {
		name  string
		r     Route
		seq   int64
		want  month.Month
		found bool
	}{
		{"first seq", twoMonths, 1, 202609, true},
		{"last of first month", twoMonths, 10086, 202609, true},
		{"first of second month", twoMonths, 10087, 202610, true},
		{"last seq", twoMonths, 12000, 202610, true},
		{"beyond the end", twoMonths, 12001, 0, false},
		{"zero", twoMonths, 0, 0, false},
		{"across a gap month", gapped, 11, 202612, true},
		{"year boundary", gapped, 21, 202701, true},
		{"empty route", nil, 5, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := tt.r.Locate(tt.seq)
			if got != tt.want || found != tt.found {
				t.Fatalf("Locate(%d) = %v,%v want %v,%v", tt.seq, got, found, tt.want, tt.found)
			}
		})
	}
}

func TestLocateWithHole(t *testing.T) {
	// A seq between two segments that no segment covers (e.g. mirror lagging) is not found.
	r := Normalize([]Segment{{Month: 202609, MinSeq: 1, MaxSeq: 5}, {Month: 202610, MinSeq: 10, MaxSeq: 12}})
	if _, found := r.Locate(7); found {
		t.Fatal("seq 7 is in no segment")
	}
}

func TestBeforeAndSince(t *testing.T) {
	tests := []struct {
		name string
		got  []month.Month
		want []month.Month
	}{
		{"before newest page", twoMonths.Before(0), []month.Month{202610, 202609}},
		{"before 10088 spans both", twoMonths.Before(10088), []month.Month{202610, 202609}},
		{"before 10087 only the first", twoMonths.Before(10087), []month.Month{202609}},
		{"before 1 nothing", twoMonths.Before(1), nil},
		{"since 0 all ascending", twoMonths.Since(0), []month.Month{202609, 202610}},
		{"since end of first month", twoMonths.Since(10086), []month.Month{202610}},
		{"since last nothing", twoMonths.Since(12000), nil},
		{"since in gapped", gapped.Since(10), []month.Month{202612, 202701}},
		{"around the boundary", twoMonths.Around(10080, 10090), []month.Month{202609, 202610}},
		{"around inside one", twoMonths.Around(5, 25), []month.Month{202609}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Fatalf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestOverlappingAndMerge(t *testing.T) {
	if _, _, found := twoMonths.Overlapping(); found {
		t.Fatal("seed example does not overlap")
	}
	bad := Normalize([]Segment{{Month: 202609, MinSeq: 1, MaxSeq: 10}, {Month: 202610, MinSeq: 10, MaxSeq: 20}})
	if _, _, found := bad.Overlapping(); !found {
		t.Fatal("shared seq 10 must count as overlap")
	}
	r := twoMonths.Merge(Segment{Month: 202610, MinSeq: 12001, MaxSeq: 12005, Count: 5})
	if r[1].MaxSeq != 12005 || r[1].Count != 1919 || r[1].MinSeq != 10087 {
		t.Fatalf("merge into existing month: %+v", r[1])
	}
	r = r.Merge(Segment{Month: 202611, MinSeq: 12006, MaxSeq: 12006, Count: 1})
	if len(r) != 3 || r[2].Month != 202611 || r.MaxSeq() != 12006 {
		t.Fatalf("merge new month: %+v", r)
	}
	if len(twoMonths) != 2 || twoMonths[1].MaxSeq != 12000 {
		t.Fatal("Merge must not modify its receiver")
	}
}

func TestOutOfOrder(t *testing.T) {
	sept := Segment{Month: 202609, MinSeq: 1, MaxSeq: 1}
	oct := Segment{Month: 202610, MinSeq: 3, MaxSeq: 3}
	tests := []struct {
		name   string
		m      month.Month
		lo, hi int64
		other  Segment
		want   bool
	}{
		{"after an earlier month", 202610, 2, 3, sept, false},
		{"below an earlier month's seq, no overlap", 202611, 2, 2, oct, true},
		{"inside an earlier month's range", 202611, 3, 3, oct, true},
		{"above a later month's seq, no overlap", 202609, 4, 4, oct, true},
		{"inside a later month's range", 202609, 1, 3, oct, true},
		{"before a later month", 202609, 1, 2, oct, false},
		{"the same month", 202610, 1, 9, oct, false},
	}
	for _, tt := range tests {
		if got := OutOfOrder(tt.m, tt.lo, tt.hi, tt.other); got != tt.want {
			t.Errorf("%s: OutOfOrder(%s, %d, %d, %+v) = %v, want %v", tt.name, tt.m, tt.lo, tt.hi, tt.other, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		r       Route
		wantErr string
	}{
		{"seed example", twoMonths, ""},
		{"empty", nil, ""},
		{"invalid month", Route{{Month: 202613, MinSeq: 1, MaxSeq: 1}}, "invalid month"},
		{"seq 0", Route{{Month: 202609, MinSeq: 0, MaxSeq: 1}}, "bad seq range [0, 1] in 202609"},
		{"inverted range", Route{{Month: 202609, MinSeq: 5, MaxSeq: 4}}, "bad seq range [5, 4] in 202609"},
		{"negative count", Route{{Month: 202609, MinSeq: 1, MaxSeq: 1, Count: -1}}, "negative count -1 in 202609"},
		{"month twice", Route{{Month: 202609, MinSeq: 1, MaxSeq: 1}, {Month: 202609, MinSeq: 2, MaxSeq: 2}}, "month 202609 appears twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	if err := (Segment{Month: 202609, MinSeq: 1, MaxSeq: 1}).Validate(); err != nil {
		t.Fatalf("valid segment: %v", err)
	}
}

func TestGrow(t *testing.T) {
	at := func(min int) time.Time { return time.Date(2026, 10, 1, 0, min, 0, 0, time.UTC) }
	tests := []struct {
		name string
		seqs []int64
		mins []int
		want Segment
	}{
		{"first message", []int64{7}, []int{5}, Segment{Month: 202610, MinSeq: 7, MaxSeq: 7, Count: 1, MinCreatedAt: at(5), MaxCreatedAt: at(5)}},
		{"in order", []int64{1, 2, 3}, []int{1, 2, 3}, Segment{Month: 202610, MinSeq: 1, MaxSeq: 3, Count: 3, MinCreatedAt: at(1), MaxCreatedAt: at(3)}},
		{"out of order", []int64{5, 2, 9}, []int{4, 9, 1}, Segment{Month: 202610, MinSeq: 2, MaxSeq: 9, Count: 3, MinCreatedAt: at(1), MaxCreatedAt: at(9)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Segment{Month: 202610}
			for i, sq := range tt.seqs {
				s = s.Grow(sq, at(tt.mins[i]))
			}
			if s != tt.want {
				t.Errorf("Grow = %+v, want %+v", s, tt.want)
			}
		})
	}
}

func TestGapWithin(t *testing.T) {
	holed := Normalize([]Segment{
		{Month: 202609, MinSeq: 3, MaxSeq: 10},
		{Month: 202610, MinSeq: 14, MaxSeq: 20},
		{Month: 202611, MinSeq: 21, MaxSeq: 30},
	})
	cases := []struct {
		r      Route
		lo, hi int64
		want   bool
	}{
		{twoMonths, 1, 1 << 62, false}, // contiguous
		{holed, 1, 2, false},           // below the first segment: purged, not a gap
		{holed, 1, 1 << 62, true},
		{holed, 11, 11, true},
		{holed, 13, 13, true},
		{holed, 14, 1 << 62, false},
		{holed, 1, 10, false},
		{holed, 31, 40, false}, // past the newest: the read's own business (history plan)
		{nil, 1, 1 << 62, false},
	}
	for _, c := range cases {
		if got := c.r.GapWithin(c.lo, c.hi); got != c.want {
			t.Errorf("%v.GapWithin(%d, %d) = %v, want %v", c.r, c.lo, c.hi, got, c.want)
		}
	}
}

func TestCovers(t *testing.T) {
	mirror := twoMonths
	cases := []struct {
		name   string
		cached Route
		want   bool
	}{
		{"the same", twoMonths, true},
		{"wider, counts apart", Route{{Month: 202609, MinSeq: 1, MaxSeq: 10086, Count: 1}, {Month: 202610, MinSeq: 10000, MaxSeq: 13000}}, true},
		{"a month missing", twoMonths[:1], false},
		{"a month cut short", Route{twoMonths[0], {Month: 202610, MinSeq: 10087, MaxSeq: 11999}}, false},
		{"a month starting late", Route{twoMonths[0], {Month: 202610, MinSeq: 10088, MaxSeq: 12000}}, false},
		{"none", nil, false},
	}
	for _, c := range cases {
		if got := c.cached.Covers(mirror); got != c.want {
			t.Errorf("%s: Covers = %v, want %v", c.name, got, c.want)
		}
	}
	if !twoMonths.Covers(nil) {
		t.Error("a route does not cover an empty one")
	}
}
