package route

import (
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/month"
)

func TestMirrorGrowsOneSegmentPerTopicAndMonth(t *testing.T) {
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	may, june := month.Month(202605), month.Month(202606)
	mi := make(Mirror)
	for _, r := range []struct {
		topic string
		m     month.Month
		seq   int64
		at    time.Time
	}{
		{"grp_1", may, 2, at.Add(time.Hour)},
		{"grp_1", may, 1, at},
		{"grp_1", june, 3, at.AddDate(0, 1, 0)},
		{"grp_2", may, 1, at},
	} {
		mi.Grow(r.topic, r.m, r.seq, r.at)
	}
	tests := []struct {
		topic string
		want  Route
	}{
		{"grp_1", Route{
			{Month: may, MinSeq: 1, MaxSeq: 2, Count: 2, MinCreatedAt: at, MaxCreatedAt: at.Add(time.Hour)},
			{Month: june, MinSeq: 3, MaxSeq: 3, Count: 1, MinCreatedAt: at.AddDate(0, 1, 0), MaxCreatedAt: at.AddDate(0, 1, 0)},
		}},
		{"grp_2", Route{{Month: may, MinSeq: 1, MaxSeq: 1, Count: 1, MinCreatedAt: at, MaxCreatedAt: at}}},
		{"grp_9", Route{}},
	}
	for _, tt := range tests {
		t.Run(tt.topic, func(t *testing.T) {
			got := mi.Route(tt.topic)
			if got == nil || len(got) != len(tt.want) {
				t.Fatalf("route %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("segment %d %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
