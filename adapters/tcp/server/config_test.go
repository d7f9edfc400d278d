package server

import (
	"testing"
	"time"
)

func TestListenURL(t *testing.T) {
	tests := []struct {
		addr    string
		want    string
		wantErr bool
	}{
		{addr: "127.0.0.1:9000", want: "tcp://127.0.0.1:9000"},
		{addr: "[::1]:9000", want: "tcp://[::1]:9000"},
		{addr: "unix:/run/imd/tcp.sock", want: "unix:///run/imd/tcp.sock"},
		{addr: "unix:", wantErr: true},
		{addr: "127.0.0.1", wantErr: true},
		{addr: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got, err := Config{Addr: tt.addr}.listenURL()
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("listenURL() = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{}.withDefaults()
	want := Config{
		ProxyTimeout: 3 * time.Second, IdleTimeout: 120 * time.Second, KeepAlive: 30 * time.Second,
		RequestTimeout: 10 * time.Second, CompressMin: 512, OutboundBytes: 4 << 20, OutboundFrames: 1024,
		Workers: 256, Queue: 1024, HandshakeTimeout: 10 * time.Second, PushAckTimeout: 30 * time.Second,
		PushAckWindow: 1024, RateLimits: RateLimits{IPKeys: 1 << 16},
	}
	if got != want {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	if off := (Config{CompressMin: -1}).withDefaults().CompressMin; off != -1 {
		t.Fatalf("negative CompressMin became %d; it must stay disabled", off)
	}
}

func TestTickInterval(t *testing.T) {
	tests := []struct {
		proxy, idle, want time.Duration
	}{
		{3 * time.Second, 120 * time.Second, 300 * time.Millisecond},
		{time.Minute, time.Hour, time.Second},
		{time.Millisecond, time.Second, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := (Config{ProxyTimeout: tt.proxy, IdleTimeout: tt.idle}).tickInterval(); got != tt.want {
			t.Errorf("tickInterval(%v, %v) = %v, want %v", tt.proxy, tt.idle, got, tt.want)
		}
	}
}
