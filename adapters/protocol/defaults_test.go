package protocol

import (
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	tests := []struct {
		name      string
		set, want int
	}{
		{"zero takes the default", 0, 7},
		{"negative takes the default", -1, 7},
		{"positive stays", 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.set
			Default(&n, 7)
			if n != tt.want {
				t.Errorf("Default(%d, 7) = %d, want %d", tt.set, n, tt.want)
			}
		})
	}
	d := time.Duration(0)
	if Default(&d, time.Second); d != time.Second {
		t.Errorf("Default of a zero duration = %v", d)
	}
}
