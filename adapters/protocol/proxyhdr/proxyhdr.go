// Package proxyhdr reads PROXY protocol v1 and v2 headers from byte
// buffers. It never reads from a connection, so an event loop that must not
// block can feed it whatever has arrived so far and call again when more does.
package proxyhdr

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/pires/go-proxyproto"
)

// ErrIncomplete means buf holds the start of a header: wait for more bytes.
var ErrIncomplete = errors.New("proxyhdr: incomplete header")

// ErrMalformed means buf does not start with a valid PROXY header. It is
// fatal: the caller closes the connection.
var ErrMalformed = errors.New("proxyhdr: malformed header")

const (
	// v1MaxLen is the longest v1 line the spec allows, CRLF included.
	v1MaxLen = 107
	// v2FixedLen is the v2 signature, version/command, family and length field.
	v2FixedLen = 16
)

var v1Signature = []byte("PROXY ")

// Parse reads the PROXY header at the start of buf. It returns the client's
// source address and n, the header length; the bytes after n belong to the
// next layer (TLS or frames). The source is the zero AddrPort when the header
// names no IP source (v2 LOCAL, v1 UNKNOWN, Unix sockets): the caller then
// uses the connection's own peer address.
func Parse(buf []byte) (src netip.AddrPort, n int, err error) {
	n, err = headerLen(buf)
	if err != nil {
		return netip.AddrPort{}, 0, err
	}
	// go-proxyproto blocks for missing bytes, so it only ever sees a header
	// already known to be whole.
	r := readers.Get().(*bufio.Reader)
	defer func() {
		r.Reset(nil)
		readers.Put(r)
	}()
	r.Reset(bytes.NewReader(buf[:n]))
	h, err := proxyproto.Read(r)
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return sourceOf(h), n, nil
}

var readers = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

// headerLen finds the header's length without parsing it: up to the LF for v1,
// the length field for v2.
func headerLen(buf []byte) (int, error) {
	switch {
	case startsWith(buf, proxyproto.SIGV2):
		if len(buf) < v2FixedLen {
			return 0, ErrIncomplete
		}
		length := binary.BigEndian.Uint16(buf[14:v2FixedLen])
		// Reject at once rather than buffer up to 64 KiB for a header the
		// parser will refuse anyway.
		if length > proxyproto.MaxV2HeaderSize {
			return 0, fmt.Errorf("%w: v2 length %d exceeds %d", ErrMalformed, length, proxyproto.MaxV2HeaderSize)
		}
		n := v2FixedLen + int(length)
		if len(buf) < n {
			return 0, ErrIncomplete
		}
		return n, nil
	case startsWith(buf, v1Signature):
		if i := bytes.IndexByte(buf[:min(len(buf), v1MaxLen)], '\n'); i >= 0 {
			return i + 1, nil
		}
		if len(buf) >= v1MaxLen {
			return 0, fmt.Errorf("%w: v1 line has no LF in its first %d bytes", ErrMalformed, v1MaxLen)
		}
		return 0, ErrIncomplete
	default:
		return 0, fmt.Errorf("%w: no PROXY signature", ErrMalformed)
	}
}

// startsWith reports whether buf starts with sig, or is a prefix of it and so
// may still turn into it.
func startsWith(buf, sig []byte) bool {
	if len(buf) < len(sig) {
		return bytes.HasPrefix(sig, buf)
	}
	return bytes.HasPrefix(buf, sig)
}

func sourceOf(h *proxyproto.Header) netip.AddrPort {
	if !h.Command.IsProxy() {
		return netip.AddrPort{}
	}
	var ap netip.AddrPort
	switch a := h.SourceAddr.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case *net.UDPAddr:
		ap = a.AddrPort()
	default:
		return netip.AddrPort{}
	}
	// A v4-mapped IPv6 source is an IPv4 client; unmapping keeps one key per
	// client for rate limits and bans whichever form the proxy wrote.
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
