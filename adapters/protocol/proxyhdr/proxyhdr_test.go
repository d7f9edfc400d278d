package proxyhdr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/pires/go-proxyproto"

	"github.com/imdhq/imd/clients/go/proxyheader"
)

var (
	client4 = netip.MustParseAddrPort("203.0.113.7:51234")
	server4 = netip.MustParseAddrPort("127.0.0.1:7000")
	client6 = netip.MustParseAddrPort("[2001:db8::7]:51234")
	server6 = netip.MustParseAddrPort("[::1]:7000")
)

// after stands for the first bytes of the next layer, which Parse must leave.
const after = "\x16\x03\x01 TLS or frames"

func v2WithTLVs(t *testing.T) []byte {
	t.Helper()
	h := proxyproto.HeaderProxyFromAddrs(2, net.TCPAddrFromAddrPort(client4), net.TCPAddrFromAddrPort(server4))
	if err := h.SetTLVs([]proxyproto.TLV{
		{Type: proxyproto.PP2_TYPE_AUTHORITY, Value: []byte("im.example.com")},
		{Type: proxyproto.PP2_TYPE_NOOP, Value: make([]byte, 5)},
	}); err != nil {
		t.Fatal(err)
	}
	b, err := h.Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func v2Unix(t *testing.T) []byte {
	t.Helper()
	h := proxyproto.HeaderProxyFromAddrs(2, &net.UnixAddr{Net: "unix", Name: "/run/a"}, &net.UnixAddr{Net: "unix", Name: "/run/b"})
	b, err := h.Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// v2Raw builds a v2 header by hand with the given command, family and body.
func v2Raw(cmd, family byte, body []byte) []byte {
	b := append(bytes.Clone(proxyproto.SIGV2), cmd, family)
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name   string
		header []byte
		want   netip.AddrPort
	}{
		{"v1 TCP4", []byte("PROXY TCP4 203.0.113.7 127.0.0.1 51234 7000\r\n"), client4},
		{"v1 TCP6", []byte("PROXY TCP6 2001:db8::7 ::1 51234 7000\r\n"), client6},
		{"v1 TCP6 v4-mapped source", []byte("PROXY TCP6 ::ffff:203.0.113.7 ::1 51234 7000\r\n"), client4},
		{"v1 UNKNOWN", []byte("PROXY UNKNOWN\r\n"), netip.AddrPort{}},
		{"v1 UNKNOWN with addresses", []byte("PROXY UNKNOWN ffff:f::1 ffff:f::2 65535 65535\r\n"), netip.AddrPort{}},
		{"v1 longest line", []byte("PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe 65535 65535\r\n"),
			netip.MustParseAddrPort("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535")},
		{"AppendV1 IPv4", proxyheader.AppendV1(nil, client4, server4), client4},
		{"AppendV1 IPv6", proxyheader.AppendV1(nil, client6, server6), client6},
		{"AppendV1 mixed families", proxyheader.AppendV1(nil, client4, server6), client4},
		{"AppendV1 invalid source", proxyheader.AppendV1(nil, netip.AddrPort{}, server4), netip.AddrPort{}},
		{"AppendV2 IPv4", proxyheader.AppendV2(nil, client4, server4), client4},
		{"AppendV2 IPv6", proxyheader.AppendV2(nil, client6, server6), client6},
		{"AppendV2 mixed families", proxyheader.AppendV2(nil, client6, server4), client6},
		{"AppendV2 LOCAL", proxyheader.AppendV2(nil, netip.AddrPort{}, netip.AddrPort{}), netip.AddrPort{}},
		{"v2 with TLVs", v2WithTLVs(t), client4},
		{"v2 LOCAL with address block", v2Raw(0x20, 0x11, make([]byte, 12)), netip.AddrPort{}},
		{"v2 Unix sockets", v2Unix(t), netip.AddrPort{}},
		{"v2 UDP4", v2Raw(0x21, 0x12, []byte{203, 0, 113, 7, 127, 0, 0, 1, 0xC8, 0x22, 0x1B, 0x58}), client4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := append(bytes.Clone(tt.header), after...)
			src, n, err := Parse(buf)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.header, err)
			}
			if n != len(tt.header) {
				t.Errorf("n = %d, want %d", n, len(tt.header))
			}
			if src != tt.want {
				t.Errorf("src = %v, want %v", src, tt.want)
			}
			for i := range len(tt.header) {
				if _, n, err := Parse(buf[:i]); !errors.Is(err, ErrIncomplete) || n != 0 {
					t.Fatalf("first %d of %d bytes: n = %d, err = %v", i, len(tt.header), n, err)
				}
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	v2 := proxyheader.AppendV2(nil, client4, server4)
	badVersion := bytes.Clone(v2)
	badVersion[12] = 0x11
	badCommand := bytes.Clone(v2)
	badCommand[12] = 0x2F
	absurd := bytes.Clone(v2[:16])
	binary.BigEndian.PutUint16(absurd[14:], 0xFFFF)

	tests := []struct {
		name string
		buf  []byte
	}{
		{"http request", []byte("GET / HTTP/1.1\r\n\r\n")},
		{"TLS client hello", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}},
		{"frame magic", []byte{0x49, 0x4D, 0x01, 0x00, 0x01}},
		{"lower case signature", []byte("proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n")},
		{"v1 without CRLF past 107 bytes", []byte("PROXY TCP4 " + strings.Repeat("1", 200))},
		{"v1 107 bytes without LF", []byte("PROXY " + strings.Repeat("x", v1MaxLen-6))},
		{"v1 LF without CR", []byte("PROXY TCP4 203.0.113.7 127.0.0.1 51234 7000\n")},
		{"v1 unknown protocol", []byte("PROXY UDP4 203.0.113.7 127.0.0.1 51234 7000\r\n")},
		{"v1 IPv6 in TCP4", []byte("PROXY TCP4 2001:db8::7 127.0.0.1 51234 7000\r\n")},
		{"v1 port out of range", []byte("PROXY TCP4 203.0.113.7 127.0.0.1 65536 7000\r\n")},
		{"v1 missing port", []byte("PROXY TCP4 203.0.113.7 127.0.0.1 51234\r\n")},
		{"v1 extra token", []byte("PROXY TCP4 203.0.113.7 127.0.0.1 51234 7000 x\r\n")},
		{"v1 empty", []byte("PROXY \r\n")},
		{"v2 bad version", badVersion},
		{"v2 bad command", badCommand},
		{"v2 absurd length", absurd},
		{"v2 PROXY with UNSPEC family", v2Raw(0x21, 0x00, nil)},
		{"v2 undefined family", v2Raw(0x21, 0x13, make([]byte, 12))},
		{"v2 IPv4 block too short", v2Raw(0x21, 0x11, make([]byte, 11))},
		{"v2 IPv6 block too short", v2Raw(0x21, 0x21, make([]byte, 12))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, n, err := Parse(tt.buf)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if n != 0 || src.IsValid() {
				t.Fatalf("n = %d, src = %v on error", n, src)
			}
		})
	}
}

func TestParseIncompleteV1BelowLimit(t *testing.T) {
	buf := []byte("PROXY " + strings.Repeat("x", v1MaxLen-7))
	if _, _, err := Parse(buf); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("%d bytes without LF: err = %v, want ErrIncomplete", len(buf), err)
	}
}

func TestAppendMatchesLibrary(t *testing.T) {
	tests := []struct {
		name     string
		src, dst netip.AddrPort
	}{
		{"IPv4", client4, server4},
		{"IPv6", client6, server6},
		{"zero ports", netip.MustParseAddrPort("10.0.0.1:0"), netip.MustParseAddrPort("10.0.0.2:0")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for version, appendFn := range map[byte]func([]byte, netip.AddrPort, netip.AddrPort) []byte{1: proxyheader.AppendV1, 2: proxyheader.AppendV2} {
				want, err := proxyproto.HeaderProxyFromAddrs(version, net.TCPAddrFromAddrPort(tt.src), net.TCPAddrFromAddrPort(tt.dst)).Format()
				if err != nil {
					t.Fatal(err)
				}
				if got := appendFn([]byte("x"), tt.src, tt.dst); !bytes.Equal(got[1:], want) || got[0] != 'x' {
					t.Errorf("v%d:\n got %q\nwant %q", version, got[1:], want)
				}
			}
		})
	}
}
