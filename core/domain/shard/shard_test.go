package shard

import (
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/month"
)

func TestEarlierActive(t *testing.T) {
	t0 := time.Date(2031, 5, 31, 23, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		held, at  time.Time
		want      time.Time
		wantMoved bool
	}{
		{"none held", time.Time{}, t0, t0, true},
		{"earlier instant", t0, t0.Add(-time.Millisecond), t0.Add(-time.Millisecond), true},
		{"same instant", t0, t0, t0, false},
		{"later instant", t0, t0.Add(time.Hour), t0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, moved := EarlierActive(tt.held, tt.at)
			if !got.Equal(tt.want) || moved != tt.wantMoved {
				t.Fatalf("EarlierActive(%v, %v) = %v, %v; want %v, %v", tt.held, tt.at, got, moved, tt.want, tt.wantMoved)
			}
		})
	}
}

// TestSupersedingAfterAStoredEarlyAllocation: the instant EarlierActive keeps for a month
// refuses an allocation in the month before made after it, not one made before it.
func TestSupersedingAfterAStoredEarlyAllocation(t *testing.T) {
	may, jun := month.Month(203105), month.Month(203106)
	early := jun.Start().Add(-time.Hour)
	since, _ := EarlierActive(jun.Start(), early)
	catalog := []Info{{Month: may, State: Sealing}, {Month: jun, State: Writable, ActiveSince: since}}
	tests := []struct {
		name string
		at   time.Time
		want month.Month
	}{
		{"allocated after it", early.Add(time.Millisecond), jun},
		{"allocated at it", early, 0},
		{"allocated before it, in flight", early.Add(-time.Millisecond), 0},
		{"no instant", time.Time{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Superseding(may, tt.at, catalog); got != tt.want {
				t.Fatalf("Superseding(%s, %v) = %s, want %s", may, tt.at, got, tt.want)
			}
		})
	}
}
