package ratelimit

import (
	"net/netip"
	"testing"
)

func TestAddrKey(t *testing.T) {
	tests := []struct {
		ip, want string
	}{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::"},
	}
	for _, tt := range tests {
		if got := AddrKey(netip.MustParseAddr(tt.ip)); got.String() != tt.want {
			t.Errorf("AddrKey(%s) = %s, want %s", tt.ip, got, tt.want)
		}
	}
	if AddrKey(netip.Addr{}).IsValid() {
		t.Error("AddrKey of an invalid address is valid")
	}
}
