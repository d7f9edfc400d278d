package inflight

import "testing"

func TestSends(t *testing.T) {
	type op struct {
		begin bool // else End
		topic string
		seq   int64
	}
	type query struct {
		topic    string
		from, to int64
		want     bool
	}
	tests := []struct {
		name    string
		ops     []op
		queries []query
	}{
		{"nothing running", nil, []query{{"grp_1", 1, 100, false}}},
		{"a running send", []op{{true, "grp_1", 5}}, []query{
			{"grp_1", 1, 4, false}, {"grp_1", 5, 5, true}, {"grp_1", 3, 9, true}, {"grp_1", 6, 9, false}, {"grp_2", 1, 9, false},
		}},
		{"a finished send", []op{{true, "grp_1", 5}, {false, "grp_1", 5}}, []query{{"grp_1", 1, 9, false}}},
		{"a retry racing its first try", []op{{true, "grp_1", 5}, {true, "grp_1", 5}, {false, "grp_1", 5}}, []query{{"grp_1", 5, 5, true}}},
		{"both finished", []op{{true, "grp_1", 5}, {true, "grp_1", 5}, {false, "grp_1", 5}, {false, "grp_1", 5}}, []query{{"grp_1", 5, 5, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			for _, o := range tt.ops {
				if o.begin {
					s.Begin("t1", o.topic, o.seq)
				} else {
					s.End("t1", o.topic, o.seq)
				}
			}
			for _, q := range tt.queries {
				if got := s.Any("t1", q.topic, q.from, q.to); got != q.want {
					t.Errorf("Any(%s, %d, %d) = %v; want %v", q.topic, q.from, q.to, got, q.want)
				}
				if s.Any("t2", q.topic, q.from, q.to) {
					t.Errorf("another tenant sees %s", q.topic)
				}
			}
		})
	}
}
