package frame

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"sync"
)

// compressLevel trades ratio for speed: bodies are small JSON that the server
// compresses on its event loop, where CPU time is latency for every connection.
const compressLevel = zlib.BestSpeed

// keepScratch bounds the inflate buffer a pooled inflater keeps, so one rare
// large body does not pin MaxInflated bytes per pool entry.
const keepScratch = 256 << 10

// deflater is a pooled zlib writer that appends to a byte slice.
type deflater struct {
	zw  *zlib.Writer
	out appender
}

// appender is an io.Writer that appends to a slice, so compressed bytes land
// directly in the caller's frame buffer without an intermediate copy.
type appender struct{ buf []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.buf = append(a.buf, p...)
	return len(p), nil
}

var deflaters = sync.Pool{New: func() any {
	d := new(deflater)
	zw, err := zlib.NewWriterLevel(&d.out, compressLevel)
	if err != nil {
		panic(fmt.Sprintf("frame: zlib level %d: %v", compressLevel, err)) // a constant level cannot be invalid
	}
	d.zw = zw
	return d
}}

// appendDeflated appends the zlib form of body to dst. ok is false, with dst
// returned as it was, when compression does not make the body smaller.
func appendDeflated(dst, body []byte) (out []byte, ok bool) {
	d := deflaters.Get().(*deflater)
	defer deflaters.Put(d)
	start := len(dst)
	d.out.buf = dst
	d.zw.Reset(&d.out)
	// Writes to an appender cannot fail, so neither can the zlib writer.
	_, _ = d.zw.Write(body)
	_ = d.zw.Close()
	out, d.out.buf = d.out.buf, nil // do not let the pool keep the caller's buffer
	if len(out)-start >= len(body) {
		return dst, false
	}
	return out, true
}

// inflater is a pooled zlib reader with its input reader and output buffer.
type inflater struct {
	in      bytes.Reader
	zr      io.Reader // nil until the first valid stream: zlib.NewReader fails on a bad header
	limited io.LimitedReader
	out     bytes.Buffer
}

var inflaters = sync.Pool{New: func() any { return new(inflater) }}

// inflate decompresses a whole zlib stream into a fresh slice. The stream must
// end exactly at the end of wire and inflate to at most MaxInflated bytes.
func inflate(wire []byte) ([]byte, error) {
	z := inflaters.Get().(*inflater)
	defer z.release()
	z.in.Reset(wire)
	if err := z.reset(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptBody, err)
	}
	// Read one byte past the cap to tell "exactly MaxInflated" from "more".
	z.limited = io.LimitedReader{R: z.zr, N: MaxInflated + 1}
	if _, err := z.out.ReadFrom(&z.limited); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptBody, err)
	}
	if z.out.Len() > MaxInflated {
		return nil, fmt.Errorf("%w: inflates to more than %d bytes", ErrTooLarge, MaxInflated)
	}
	if z.in.Len() != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the zlib stream", ErrCorruptBody, z.in.Len())
	}
	if z.out.Len() == 0 {
		return nil, nil
	}
	return bytes.Clone(z.out.Bytes()), nil
}

func (z *inflater) reset() error {
	if z.zr != nil {
		// compress/zlib documents that its readers implement zlib.Resetter.
		return z.zr.(zlib.Resetter).Reset(&z.in, nil)
	}
	zr, err := zlib.NewReader(&z.in)
	if err != nil {
		return err
	}
	z.zr = zr
	return nil
}

func (z *inflater) release() {
	z.in.Reset(nil)
	z.limited.R = nil
	z.out.Reset()
	if z.out.Cap() > keepScratch {
		z.out = bytes.Buffer{}
	}
	inflaters.Put(z)
}
