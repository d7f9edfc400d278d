package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/cmd/imctl/adminapi"
	"github.com/imdhq/imd/core/domain/month"
)

func TestPlanSeed(t *testing.T) {
	active := month.Month(202612)
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	pairs := [][2]int64{{1, 2}, {3, 4}}
	tests := []struct {
		name     string
		months   int
		messages int
		// want: per month, the rows; and the seq ranges of the first topic.
		rows   []int
		first  [][2]int64
		errMsg string
	}{
		{"even", 3, 12, []int{4, 4, 4}, [][2]int64{{1, 2}, {3, 4}, {5, 6}}, ""},
		{"remainder to the first topic", 2, 5, []int{2, 3}, [][2]int64{{1, 1}, {2, 3}}, ""},
		{"fewer messages than months", 4, 2, []int{0, 0, 0, 2}, [][2]int64{{1, 1}}, ""},
		{"too many for the active month so far", 1, 200_000_000, nil, nil, "do not fit in month 202612"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := planSeed(active, tt.months, pairs, tt.messages, now)
			if tt.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("err = %v, want %q", err, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(plan) != tt.months || plan[len(plan)-1].month != active || plan[0].month != active.Add(1-tt.months) {
				t.Fatalf("months %v", plan)
			}
			var firstTopic [][2]int64
			next := map[string]int64{"p2p_1_2": 1, "p2p_3_4": 1}
			for i, m := range plan {
				if m.rows != tt.rows[i] {
					t.Errorf("month %s: %d rows, want %d", m.month, m.rows, tt.rows[i])
				}
				for _, s := range m.spans {
					if s.first != next[s.topic] || s.last < s.first {
						t.Errorf("%s in %s: seqs %d..%d, want from %d", s.topic, m.month, s.first, s.last, next[s.topic])
					}
					next[s.topic] = s.last + 1
					if s.topic == "p2p_1_2" {
						firstTopic = append(firstTopic, [2]int64{s.first, s.last})
					}
				}
				if m.rows > 0 {
					last := m.from.Add(time.Duration(m.rows) * m.step)
					if m.from != m.month.Start() || m.step < time.Millisecond || !last.Before(m.month.End()) || last.After(now) {
						t.Errorf("month %s: created_at from %v step %v", m.month, m.from, m.step)
					}
				}
			}
			if len(firstTopic) != len(tt.first) {
				t.Fatalf("first topic spans %v, want %v", firstTopic, tt.first)
			}
			for i := range firstTopic {
				if firstTopic[i] != tt.first[i] {
					t.Errorf("first topic spans %v, want %v", firstTopic, tt.first)
				}
			}
		})
	}
}

func TestSeedValidate(t *testing.T) {
	ok := SeedConfig{Messages: 10, Months: 2, Pairs: 2, Batch: 100, Parallel: 1, Admin: adminapi.New("http://x", "k", "t", nil)}
	tests := []struct {
		name   string
		change func(*SeedConfig)
		want   string
	}{
		{"no database", func(*SeedConfig) {}, "needs the admin API and the tenant's database"},
		{"fewer messages than pairs", func(c *SeedConfig) { c.Messages = 1 }, "--messages at least --pairs"},
		{"no months", func(c *SeedConfig) { c.Months = 0 }, "--months"},
		{"batch too big", func(c *SeedConfig) { c.Batch = maxSeedBatch + 1 }, "--batch"},
		{"no parallelism", func(c *SeedConfig) { c.Parallel = 0 }, "--parallel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.change(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}
