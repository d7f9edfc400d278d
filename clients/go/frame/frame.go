// Package frame encodes and decodes the binary frames of PROTOCOL.md §2.
//
// It works on byte slices only, never on a net.Conn, so the gnet event loop can
// call it on whatever it has buffered without blocking, and the Go client can
// call it on what its reader goroutine has read.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Wire constants of PROTOCOL.md §2.
const (
	Magic     uint16 = 0x494D // "IM"
	Version   uint8  = 1
	HeaderLen        = 23
	// MaxBody limits body_length, i.e. the body as sent (compressed or not).
	MaxBody = 65536
	// MaxInflated caps a decompressed body so a small compressed body cannot
	// expand into unbounded memory (zip bomb).
	MaxInflated = 1 << 20
	// FlagCompressed marks a zlib (RFC 1950) body. It is the only defined flag.
	FlagCompressed uint16 = 1
)

// ErrIncomplete means buf does not hold a whole header or frame yet: wait for
// more bytes. Every other error is fatal and the caller closes the connection.
var ErrIncomplete = errors.New("frame: incomplete")

// Fatal errors: the stream cannot be resynchronised after any of them.
var (
	ErrBadMagic    = errors.New("frame: bad magic")
	ErrBadVersion  = errors.New("frame: unsupported version")
	ErrTooLarge    = errors.New("frame: body too large")
	ErrBadFlags    = errors.New("frame: unknown flags")
	ErrCorruptBody = errors.New("frame: corrupt compressed body")
)

// Byte offsets of the header fields.
const (
	offMagic      = 0
	offVersion    = 2
	offCommand    = 3
	offFlags      = 5
	offRequestID  = 7
	offSequenceID = 15
	offBodyLen    = 19
)

// Header is the fixed part of a frame. Magic and version are implied.
type Header struct {
	Command    uint16
	Flags      uint16
	RequestID  uint64
	SequenceID uint32
	BodyLen    uint32 // body_length as on the wire (the compressed size when compressed)
}

// Compressed reports whether the body on the wire is zlib-compressed.
func (h Header) Compressed() bool { return h.Flags&FlagCompressed != 0 }

// Frame is one decoded frame. Body is always the plain (inflated) body; Flags
// and BodyLen keep what was on the wire.
type Frame struct {
	Header
	Body []byte
}

// ParseHeader validates and decodes the header at the start of buf. It returns
// ErrIncomplete while buf is shorter than HeaderLen.
func ParseHeader(buf []byte) (Header, error) {
	if len(buf) < HeaderLen {
		return Header{}, ErrIncomplete
	}
	if m := binary.BigEndian.Uint16(buf[offMagic:]); m != Magic {
		return Header{}, fmt.Errorf("%w: 0x%04x", ErrBadMagic, m)
	}
	if v := buf[offVersion]; v != Version {
		return Header{}, fmt.Errorf("%w: %d", ErrBadVersion, v)
	}
	h := Header{
		Command:    binary.BigEndian.Uint16(buf[offCommand:]),
		Flags:      binary.BigEndian.Uint16(buf[offFlags:]),
		RequestID:  binary.BigEndian.Uint64(buf[offRequestID:]),
		SequenceID: binary.BigEndian.Uint32(buf[offSequenceID:]),
		BodyLen:    binary.BigEndian.Uint32(buf[offBodyLen:]),
	}
	if h.Flags&^FlagCompressed != 0 {
		return Header{}, fmt.Errorf("%w: 0x%04x", ErrBadFlags, h.Flags)
	}
	if h.BodyLen > MaxBody {
		return Header{}, fmt.Errorf("%w: body_length %d > %d", ErrTooLarge, h.BodyLen, MaxBody)
	}
	return h, nil
}

// Decode reads one whole frame from the front of buf and returns it with n,
// the number of bytes it consumed. While buf holds a valid header but not the
// whole body it returns ErrIncomplete and n = 0. The returned Body never
// aliases buf, so buf may be reused at once.
func Decode(buf []byte) (f Frame, n int, err error) {
	h, err := ParseHeader(buf)
	if err != nil {
		return Frame{}, 0, err
	}
	end := HeaderLen + int(h.BodyLen)
	if len(buf) < end {
		return Frame{}, 0, ErrIncomplete
	}
	wire := buf[HeaderLen:end]
	var body []byte
	switch {
	case h.Compressed():
		if body, err = inflate(wire); err != nil {
			return Frame{}, 0, err
		}
	case len(wire) > 0:
		body = append([]byte(nil), wire...)
	}
	return Frame{Header: h, Body: body}, end, nil
}

// Append encodes one frame onto dst and returns the extended slice. The body is
// zlib-compressed when compressMin > 0, len(body) >= compressMin and the result
// is smaller than body. It fails, returning dst unchanged, when the body would
// exceed MaxBody on the wire or MaxInflated plain, because a peer must reject
// such a frame.
func Append(dst []byte, cmd uint16, requestID uint64, sequenceID uint32, body []byte, compressMin int) ([]byte, error) {
	if len(body) > MaxInflated {
		return dst, fmt.Errorf("%w: body of %d bytes > %d", ErrTooLarge, len(body), MaxInflated)
	}
	start := len(dst)
	out := appendHeader(dst, cmd, 0, requestID, sequenceID)
	flags := uint16(0)
	if compressMin > 0 && len(body) >= compressMin {
		var ok bool
		if out, ok = appendDeflated(out, body); ok {
			flags = FlagCompressed
		}
	}
	if flags == 0 {
		out = append(out, body...)
	}
	bodyLen := len(out) - start - HeaderLen
	if bodyLen > MaxBody {
		return dst, fmt.Errorf("%w: %d bytes on the wire > %d", ErrTooLarge, bodyLen, MaxBody)
	}
	binary.BigEndian.PutUint16(out[start+offFlags:], flags)
	binary.BigEndian.PutUint32(out[start+offBodyLen:], uint32(bodyLen))
	return out, nil
}

// appendHeader writes a header with body_length 0; Append fills it in once the
// body size is known.
func appendHeader(dst []byte, cmd, flags uint16, requestID uint64, sequenceID uint32) []byte {
	dst = binary.BigEndian.AppendUint16(dst, Magic)
	dst = append(dst, Version)
	dst = binary.BigEndian.AppendUint16(dst, cmd)
	dst = binary.BigEndian.AppendUint16(dst, flags)
	dst = binary.BigEndian.AppendUint64(dst, requestID)
	dst = binary.BigEndian.AppendUint32(dst, sequenceID)
	return binary.BigEndian.AppendUint32(dst, 0)
}
