// Package proxyheader writes the PROXY protocol header (v1 and v2) that Nginx puts in
// front of a TCP stream, so a client or a test can stand where Nginx stands.
package proxyheader

import (
	"encoding/binary"
	"net/netip"
	"strconv"
)

// signatureV2 starts every v2 header.
const signatureV2 = "\r\n\r\n\x00\r\nQUIT\n"

// v2 version/command and family/transport bytes.
const (
	v2Local = 0x20
	v2Proxy = 0x21
	v2TCP4  = 0x11
	v2TCP6  = 0x21
)

// AppendV1 appends a v1 line for a TCP connection from source to destination,
// as Nginx writes it. When either address is invalid it appends
// "PROXY UNKNOWN\r\n". Mixed families are written as TCP6 with v4-mapped
// addresses.
func AppendV1(dst []byte, source, destination netip.AddrPort) []byte {
	src, dest, ok := sameFamily(source, destination)
	if !ok {
		return append(dst, "PROXY UNKNOWN\r\n"...)
	}
	if src.Addr().Is4() {
		dst = append(dst, "PROXY TCP4 "...)
	} else {
		dst = append(dst, "PROXY TCP6 "...)
	}
	dst = src.Addr().AppendTo(dst)
	dst = append(dst, ' ')
	dst = dest.Addr().AppendTo(dst)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(src.Port()), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(dest.Port()), 10)
	return append(dst, "\r\n"...)
}

// AppendV2 appends a binary v2 header for a TCP connection from source to
// destination. When either address is invalid it appends a LOCAL header.
// Mixed families are written as TCP over IPv6 with v4-mapped addresses.
func AppendV2(dst []byte, source, destination netip.AddrPort) []byte {
	dst = append(dst, signatureV2...)
	src, dest, ok := sameFamily(source, destination)
	if !ok {
		return append(dst, v2Local, 0, 0, 0)
	}
	if src.Addr().Is4() {
		dst = append(dst, v2Proxy, v2TCP4, 0, 12)
	} else {
		dst = append(dst, v2Proxy, v2TCP6, 0, 36)
	}
	dst = append(dst, src.Addr().AsSlice()...)
	dst = append(dst, dest.Addr().AsSlice()...)
	dst = binary.BigEndian.AppendUint16(dst, src.Port())
	return binary.BigEndian.AppendUint16(dst, dest.Port())
}

// sameFamily brings both addresses to one family, dropping zones the header
// cannot carry: IPv4 when both are IPv4 (mapped or not), IPv6 otherwise.
func sameFamily(src, dst netip.AddrPort) (netip.AddrPort, netip.AddrPort, bool) {
	if !src.IsValid() || !dst.IsValid() {
		return src, dst, false
	}
	s, d := src.Addr().Unmap().WithZone(""), dst.Addr().Unmap().WithZone("")
	if s.Is4() != d.Is4() {
		s, d = netip.AddrFrom16(s.As16()), netip.AddrFrom16(d.As16())
	}
	return netip.AddrPortFrom(s, src.Port()), netip.AddrPortFrom(d, dst.Port()), true
}
