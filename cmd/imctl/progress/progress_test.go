package progress

import (
	"testing"
	"time"
)

func TestMeter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type obs struct {
		at    float64
		phase string
		done  int64
	}
	tests := []struct {
		name string
		obs  []obs
		want string
	}{
		{"first sample of a job already half done: no rate yet", []obs{{0, "copying", 500_000}},
			"copying: 500,000 of 1,000,000 rows (50%), measuring speed"},
		{"a batch landing just after the first poll is no speed", []obs{{0, "copying", 500_000}, {0.001, "copying", 502_000}},
			"copying: 502,000 of 1,000,000 rows (50%), measuring speed"},
		{"steady", []obs{{0, "copying", 0}, {5, "copying", 100_000}, {10, "copying", 200_000}},
			"copying: 200,000 of 1,000,000 rows (20%), 20,000 rows/s, ETA 40s"},
		{"the window forgets an old fast stretch", []obs{{0, "copying", 0}, {10, "copying", 500_000}, {40, "copying", 510_000}, {50, "copying", 520_000}},
			"copying: 520,000 of 1,000,000 rows (52%), 500 rows/s, ETA 16m0s"},
		{"stalled", []obs{{0, "copying", 10}, {10, "copying", 10}},
			"copying: 10 of 1,000,000 rows (0%), no progress for 10s"},
		{"a new phase measures anew", []obs{{0, "copying", 0}, {10, "copying", 1_000_000}, {11, "verifying", 0}},
			"verifying: 0 of 1,000,000 rows (0%), measuring speed"},
		{"a rerun starts over", []obs{{0, "copying", 900_000}, {10, "copying", 1_000_000}, {11, "copying", 1000}},
			"copying: 1,000 of 1,000,000 rows (0%), measuring speed"},
		{"done", []obs{{0, "copying", 0}, {10, "copying", 1_000_000}},
			"copying: 1,000,000 of 1,000,000 rows (100%), 100,000 rows/s, ETA 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(DefaultWindow)
			for _, o := range tt.obs {
				m.Observe(at(o.at), o.phase, o.done, 1_000_000)
			}
			if got := m.Line("rows"); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestLineWithoutTotal(t *testing.T) {
	m := New(DefaultWindow)
	t0 := time.Now()
	m.Observe(t0, "exporting", 0, 0)
	m.Observe(t0.Add(4*time.Second), "exporting", 8000, 0)
	if got, want := m.Line("rows"), "exporting: 8,000 rows, 2,000 rows/s"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
