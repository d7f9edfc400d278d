package dispatch

import (
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	got := Config{}.withDefaults()
	want := Config{
		RequestTimeout: 10 * time.Second, CompressMin: 512, Workers: 256, Queue: 1024,
		PushAckTimeout: 30 * time.Second, PushAckWindow: 1024, RateLimits: RateLimits{IPKeys: 1 << 16},
	}
	if got != want {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	if off := (Config{CompressMin: -1}).withDefaults().CompressMin; off != -1 {
		t.Fatalf("negative CompressMin became %d; it must stay disabled", off)
	}
}

func TestTickInterval(t *testing.T) {
	tests := []struct{ ackTimeout, want time.Duration }{
		{30 * time.Second, time.Second},
		{2 * time.Second, 200 * time.Millisecond},
		{time.Millisecond, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := (Config{PushAckTimeout: tt.ackTimeout}).tickInterval(); got != tt.want {
			t.Errorf("tickInterval(%v) = %v, want %v", tt.ackTimeout, got, tt.want)
		}
	}
}
