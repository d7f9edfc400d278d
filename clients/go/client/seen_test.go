package client

import "testing"

func TestTopicSeen(t *testing.T) {
	tests := []struct {
		name      string
		floor     int64 // -1: unknown
		add       []int64
		wantFresh []bool
		wantFloor int64
	}{
		{"in order from a known floor", 0, []int64{1, 2, 3}, []bool{true, true, true}, 3},
		{"duplicates", 0, []int64{1, 1, 2, 1}, []bool{true, false, true, false}, 2},
		{"out of order fills the hole", 0, []int64{2, 3, 1}, []bool{true, true, true}, 3},
		{"a hole keeps the floor, a late push below it still counts", 5, []int64{7, 8, 6}, []bool{true, true, true}, 8},
		{"below a known floor is old", 5, []int64{3, 6}, []bool{false, true}, 6},
		{"unknown floor: anything new counts", -1, []int64{9, 4, 9}, []bool{true, true, false}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s topicSeen
			if tt.floor >= 0 {
				s.setFloor(tt.floor)
			}
			for i, seq := range tt.add {
				if got := s.add(seq); got != tt.wantFresh[i] {
					t.Errorf("add(%d) = %v, want %v", seq, got, tt.wantFresh[i])
				}
			}
			if s.floor != tt.wantFloor {
				t.Errorf("floor %d, want %d", s.floor, tt.wantFloor)
			}
		})
	}
}

func TestTopicSeenStaysBounded(t *testing.T) {
	var s topicSeen
	s.setFloor(0)
	// Every other seq is a hole (deleted for this user), so the floor cannot advance
	// over them: the set is trimmed from below instead.
	for seq := int64(2); seq < 4*maxAbove; seq += 2 {
		s.add(seq)
	}
	if len(s.above) > maxAbove {
		t.Fatalf("%d seqs remembered, want at most %d", len(s.above), maxAbove)
	}
	if !s.has(4*maxAbove-2) || s.add(4*maxAbove-2) {
		t.Error("the newest seq is forgotten")
	}
}
