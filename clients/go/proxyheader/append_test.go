package proxyheader

import (
	"net/netip"
	"testing"
)

// TestAppend pins the bytes Nginx writes; the server's proxyhdr tests also read them back
// with an independent parser.
func TestAppend(t *testing.T) {
	client4, server4 := netip.MustParseAddrPort("203.0.113.7:40000"), netip.MustParseAddrPort("10.0.0.1:9000")
	client6 := netip.MustParseAddrPort("[2001:db8::5%eth0]:40000")
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"v1 IPv4", AppendV1(nil, client4, server4), "PROXY TCP4 203.0.113.7 10.0.0.1 40000 9000\r\n"},
		{"v1 mixed families as IPv6 without zone", AppendV1(nil, client6, server4),
			"PROXY TCP6 2001:db8::5 ::ffff:10.0.0.1 40000 9000\r\n"},
		{"v1 v4-mapped is IPv4", AppendV1(nil, netip.MustParseAddrPort("[::ffff:203.0.113.7]:1"), server4),
			"PROXY TCP4 203.0.113.7 10.0.0.1 1 9000\r\n"},
		{"v1 unknown", AppendV1([]byte("x"), netip.AddrPort{}, server4), "xPROXY UNKNOWN\r\n"},
		{"v2 IPv4", AppendV2(nil, client4, server4),
			signatureV2 + "\x21\x11\x00\x0c" + "\xcb\x00\x71\x07" + "\x0a\x00\x00\x01" + "\x9c\x40" + "\x23\x28"},
		{"v2 LOCAL", AppendV2(nil, client4, netip.AddrPort{}), signatureV2 + "\x20\x00\x00\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.got) != tt.want {
				t.Errorf("got  %q\nwant %q", tt.got, tt.want)
			}
		})
	}
	v6 := AppendV2(nil, client6, netip.MustParseAddrPort("[2001:db8::1]:443"))
	if len(v6) != 16+36 || v6[13] != 0x21 || v6[15] != 36 {
		t.Errorf("v2 IPv6 header %x", v6)
	}
}
