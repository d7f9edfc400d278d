package topic

import "testing"

func TestForPairIsOrderFree(t *testing.T) {
	if ForPair(9, 2) != "p2p_2_9" || ForPair(2, 9) != "p2p_2_9" {
		t.Fatalf("got %q and %q", ForPair(9, 2), ForPair(2, 9))
	}
	if ForGroup(42) != "grp_42" {
		t.Fatal(ForGroup(42))
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		kind Kind
	}{
		{"grp_1", true, Group},
		{"grp_9223372036854775807", true, Group},
		{"grp_9223372036854775808", false, 0},
		{"grp_0", false, 0},
		{"grp_01", false, 0},
		{"grp_-1", false, 0},
		{"grp_", false, 0},
		{"grp_1 ", false, 0},
		{"p2p_1_2", true, P2P},
		{"p2p_2_1", false, 0},
		{"p2p_1_1", false, 0},
		{"p2p_1", false, 0},
		{"p2p_1_2_3", false, 0},
		{"dm_1_2", false, 0},
		{"", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := Parse(tt.in)
			if tt.ok != (err == nil) || p.Kind != tt.kind {
				t.Fatalf("Parse(%q) = %+v, %v", tt.in, p, err)
			}
		})
	}
	p, _ := Parse("p2p_3_7")
	if !p.Has(3) || !p.Has(7) || p.Has(5) || p.Peer(3) != 7 || p.Peer(7) != 3 {
		t.Fatalf("pair helpers wrong: %+v", p)
	}
}
