package month

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestOfUsesUTC(t *testing.T) {
	tests := []struct {
		name string
		at   time.Time
		want Month
	}{
		{"last ms of september", time.Date(2026, 9, 30, 23, 59, 59, 999e6, time.UTC), 202609},
		{"first instant of october", time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), 202610},
		{"local time east of UTC is still september in UTC", time.Date(2026, 10, 1, 7, 0, 0, 0, time.FixedZone("CST", 8*3600)), 202609},
		{"new year", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 202701},
		{"leap day", time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC), 202802},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Of(tt.at); got != tt.want {
				t.Fatalf("Of(%v) = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Month
		ok   bool
	}{
		{"202611", 202611, true},
		{"200001", 200001, true},
		{"299912", 299912, true},
		{"202613", 0, false},
		{"202600", 0, false},
		{"199912", 0, false},
		{"20261", 0, false},
		{"2026111", 0, false},
		{"2026-1", 0, false},
		{" 202611", 0, false},
		{"+20261", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.ok != (err == nil) || got != tt.want {
				t.Fatalf("Parse(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error must wrap ErrInvalid: %v", err)
			}
		})
	}
}

func TestArithmetic(t *testing.T) {
	tests := []struct {
		from Month
		n    int
		want Month
	}{
		{202611, 1, 202612},
		{202612, 1, 202701},
		{202701, -1, 202612},
		{202601, -13, 202412},
		{202611, 0, 202611},
		{202611, 26, 202901},
	}
	for _, tt := range tests {
		if got := tt.from.Add(tt.n); got != tt.want {
			t.Errorf("%v.Add(%d) = %v, want %v", tt.from, tt.n, got, tt.want)
		}
	}
	m := Month(202612)
	if m.Start() != time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) || m.End() != time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) {
		t.Fatalf("bounds of %v: %v %v", m, m.Start(), m.End())
	}
	if Of(m.End().Add(-time.Millisecond)) != m || Of(m.End()) != m.Next() {
		t.Fatal("End must be the exclusive bound")
	}
}

func TestTableWhitelist(t *testing.T) {
	valid, err := Month(202611).Table()
	if err != nil || valid != "im_group_messages_202611" {
		t.Fatalf("Table() = %q, %v", valid, err)
	}
	if _, err := Month(202613).Table(); err == nil {
		t.Fatal("an invalid month must not produce a table name")
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"im_group_messages_202611", true},
		{"im_group_messages_202613", false},
		{"im_group_messages_2026111", false},
		{"im_group_messages_20261", false},
		{"im_group_messages_202611; DROP TABLE x", false},
		{"im_group_messages_202611 ", false},
		{"IM_GROUP_MESSAGES_202611", false},
		{"im_group_messages_tpl", false},
		{"im_group_messages", false},
		{"im_group_messages_20261a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTable(tt.name)
			if tt.ok != (err == nil) {
				t.Fatalf("ParseTable(%q) err = %v, want ok=%v", tt.name, err, tt.ok)
			}
		})
	}
}

func TestFloorsOnlyRise(t *testing.T) {
	var f Floors
	steps := []struct {
		tenant string
		raise  Month
		want   Month
	}{
		{"a", 202612, 202612},
		{"a", 202701, 202701},
		{"a", 202611, 202701}, // never lowered
		{"a", 0, 202701},      // an invalid month is ignored
		{"b", 0, 0},           // tenants are apart
	}
	for _, s := range steps {
		f.Raise(s.tenant, s.raise)
		if got := f.Of(s.tenant); got != s.want {
			t.Fatalf("after Raise(%s, %d): Of = %d, want %d", s.tenant, s.raise, got, s.want)
		}
	}
	var none *Floors
	none.Raise("a", 202701)
	if none.Of("a") != 0 {
		t.Fatal("a nil Floors knows a floor")
	}
}

// TestStringIsSixDigits: String writes what "%06d" writes, valid month or not.
func TestStringIsSixDigits(t *testing.T) {
	for _, m := range []Month{0, 1, 9, 10, 99999, 100000, 202612, 209912, 999999, 1000000, -1, -202612, 1<<31 - 1, -1 << 31} {
		if got, want := m.String(), fmt.Sprintf("%06d", int32(m)); got != want {
			t.Errorf("Month(%d).String() = %q, want %q", int32(m), got, want)
		}
	}
}

func BenchmarkString(b *testing.B) {
	m := Month(202612)
	for b.Loop() {
		_ = m.String()
	}
}
