package history

import (
	"fmt"
	"testing"

	"github.com/imdhq/imd/core/domain/message"
)

// run builds what a cache read returns: the listed seqs in the given order.
func run(seqs ...int64) []message.Message {
	out := make([]message.Message, len(seqs))
	for i, s := range seqs {
		out[i] = message.Message{Seq: s}
	}
	return out
}

func seqsOf(ms []message.Message) string {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return fmt.Sprint(out)
}

// TestCoveredRun pins the rule of seed 000 §6.1: a cached page counts only when every seq
// from the cursor on is there, and a short one only when it ends where the topic ends.
func TestCoveredRun(t *testing.T) {
	const newest = 20
	cases := []struct {
		name         string
		got          []message.Message
		cursor       int64
		desc         bool
		n            int
		wantRun      string
		wantComplete bool
	}{
		// Forward: the cache returns the cursor itself first, then up to n more.
		{"forward full page", run(5, 6, 7, 8), 5, false, 2, "[6 7 8]", false},
		{"forward to the newest", run(17, 18, 19, 20), 17, false, 5, "[18 19 20]", true},
		{"forward from the start", run(1, 2, 3), 0, false, 5, "[1 2 3]", false},
		{"forward cursor not cached", run(6, 7, 8), 5, false, 5, "[]", false},
		{"forward start trimmed", run(2, 3), 0, false, 5, "[]", false},
		{"forward hole", run(5, 6, 8, 9), 5, false, 5, "[6]", false},
		{"forward cache behind the route", run(17, 18, 19), 17, false, 5, "[18 19]", false},
		{"forward caught up", run(20), 20, false, 5, "[]", true},
		{"forward empty cache", run(), 20, false, 5, "[]", false},
		{"forward more cached than read", run(17, 18, 19, 20, 21, 22), 17, false, 5, "[18 19 20 21 22]", false},
		// Backward: the cache returns up to n seqs below the cursor, newest first.
		{"backward from the newest", run(20, 19, 18), 0, true, 3, "[20 19 18]", false},
		{"backward newest not cached", run(19, 18, 17), 0, true, 3, "[]", false},
		{"backward empty cache", run(), 0, true, 3, "[]", false},
		{"backward below a cursor", run(9, 8, 7), 10, true, 3, "[9 8 7]", false},
		{"backward to seq 1", run(3, 2, 1), 4, true, 5, "[3 2 1]", true},
		{"backward hole", run(9, 7, 6), 10, true, 5, "[9]", false},
		{"backward trimmed before seq 1", run(3, 2), 4, true, 5, "[3 2]", false},
		{"backward cursor past the newest", run(20, 19), 30, true, 2, "[20 19]", false},
		{"backward cursor past a stale cache", run(18, 17), 30, true, 2, "[]", false},
		{"backward nothing below seq 1", run(), 1, true, 5, "[]", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := page{cursor: tc.cursor, desc: tc.desc}
			got, complete := coveredRun(tc.got, p, newest, tc.n)
			if seqsOf(got) != tc.wantRun || complete != tc.wantComplete {
				t.Fatalf("coveredRun = %s, %v; want %s, %v", seqsOf(got), complete, tc.wantRun, tc.wantComplete)
			}
		})
	}
}
