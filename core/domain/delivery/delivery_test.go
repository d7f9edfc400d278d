package delivery

import (
	"hash/fnv"
	"strconv"
	"testing"
)

func TestPartitionOf(t *testing.T) {
	fnv1a := func(s string, n int) int {
		h := fnv.New32a()
		h.Write([]byte(s))
		return int(h.Sum32() % uint32(n))
	}
	tests := []struct {
		name  string
		topic string
		n     int
		want  int
	}{
		{"one partition", "grp_1", 1, 0},
		{"no partitions counts as one", "grp_1", 0, 0},
		{"empty topic", "", 16, fnv1a("", 16)},
		{"group", "grp_42", 16, fnv1a("grp_42", 16)},
		{"p2p", "p2p_1_2", 7, fnv1a("p2p_1_2", 7)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PartitionOf(tt.topic, tt.n); got != tt.want {
				t.Fatalf("PartitionOf(%q, %d) = %d; want %d", tt.topic, tt.n, got, tt.want)
			}
		})
	}
}

func TestPartitionOfSpreadsTopics(t *testing.T) {
	const n, topics = 16, 1600
	var counts [n]int
	for i := range topics {
		counts[PartitionOf("grp_"+strconv.Itoa(i), n)]++
	}
	for p, c := range counts {
		if c < topics/n/2 || c > topics/n*2 {
			t.Fatalf("partition %d holds %d of %d topics; want about %d", p, c, topics, topics/n)
		}
	}
}
