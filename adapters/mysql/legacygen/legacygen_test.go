package legacygen

import (
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/month"
)

func TestRowsAreRealisticAndReproducible(t *testing.T) {
	end := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	ids := memory.NewIDs(nil)
	spec := Spec{Rows: 20_000, Groups: 50, Pairs: 10, End: end, IDs: ids}.withDefaults()
	draw := func() ([]Row, []Topic) {
		g, err := newGenerator(spec)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := g.rows()
		if err != nil {
			t.Fatal(err)
		}
		return rows, g.topics
	}
	rows, topics := draw()
	again, _ := draw()
	if len(rows) != spec.Rows || !slices.EqualFunc(rows, again, func(a, b Row) bool { return a.MessageID == b.MessageID && a.Seq == b.Seq }) {
		t.Fatalf("%d rows, or not the same twice", len(rows))
	}
	seqs := map[string][]Row{}
	months := map[month.Month]bool{}
	statuses := map[string]int{}
	seen := map[int64]bool{}
	for _, r := range rows {
		seqs[r.Topic] = append(seqs[r.Topic], r)
		months[month.Of(r.CreatedAt)] = true
		statuses[r.Status]++
		if seen[r.MessageID] || !ids.TimeOf(r.MessageID).Equal(r.CreatedAt) {
			t.Fatalf("msg_id %d: duplicate, or not of its time %s", r.MessageID, r.CreatedAt)
		}
		seen[r.MessageID] = true
		if r.CreatedAt.After(end) || r.CreatedAt.Before(end.AddDate(0, -12, 0)) {
			t.Fatalf("created %s outside the year before %s", r.CreatedAt, end)
		}
	}
	if len(seqs) != len(topics) || len(months) < 12 {
		t.Fatalf("%d topics with rows of %d, %d months", len(seqs), len(topics), len(months))
	}
	for name, rs := range seqs {
		for i, r := range rs {
			if r.Seq != int64(i+1) || i > 0 && !r.CreatedAt.After(rs[i-1].CreatedAt) {
				t.Fatalf("%s: seq %d at %d, or not after the one before", name, r.Seq, i)
			}
		}
	}
	if statuses["recalled"] == 0 || statuses["deleted"] == 0 || statuses["normal"] < spec.Rows*9/10 {
		t.Fatalf("statuses %v", statuses)
	}
	if len(seqs[topics[0].Name]) < 10*len(seqs[topics[len(topics)/2].Name]) {
		t.Fatalf("busiest topic %d rows, a middle one %d: want a long tail", len(seqs[topics[0].Name]), len(seqs[topics[len(topics)/2].Name]))
	}
}
