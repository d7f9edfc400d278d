package session

import "testing"

// TestPushedDropsRepeatsOnly: a seq already queued on the connection is dropped, also when it
// comes back after later ones; a seq that arrives late for the first time (around a deliver
// takeover) still goes out; a refused push may come again; a seq a window or more behind the
// highest is taken for a repeat.
func TestPushedDropsRepeatsOnly(t *testing.T) {
	type push struct {
		seq     int64
		first   bool
		refused bool // the connection did not take it
	}
	cases := []struct {
		name   string
		pushes []push
	}{
		{"in order, then the rerun", []push{{1, true, false}, {2, true, false}, {3, true, false}, {2, false, false}, {3, false, false}}},
		{"late for the first time", []push{{19, true, false}, {21, true, false}, {20, true, false}, {20, false, false}, {21, false, false}}},
		{"refused, then again", []push{{5, true, false}, {6, true, true}, {6, true, false}, {6, false, false}, {5, false, false}}},
		{"refused below the highest", []push{{5, true, true}, {6, true, false}, {5, true, false}, {5, false, false}}},
		{"a window behind", []push{{100, true, false}, {100 - pushedWindow + 1, true, false}, {100 - pushedWindow, false, false}}},
		{"a jump past the window forgets", []push{{1, true, false}, {1 + 2*pushedWindow, true, false}, {2, false, false}, {1 + 2*pushedWindow - 1, true, false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p pushed
			for i, ps := range c.pushes {
				if got := p.first("grp_1", ps.seq); got != ps.first {
					t.Fatalf("push %d (seq %d): first = %v, want %v", i, ps.seq, got, ps.first)
				}
				if ps.refused {
					p.refused("grp_1", ps.seq)
				}
			}
			if !p.first("grp_2", 1) {
				t.Error("another topic's seq 1 taken for a repeat")
			}
		})
	}
}
