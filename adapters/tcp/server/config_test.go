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
		OutboundBytes: 4 << 20, OutboundFrames: 1024, HandshakeTimeout: 10 * time.Second,
	}
	if got != want {
		t.Fatalf("defaults %+v, want %+v (the commands' defaults are dispatch's)", got, want)
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
