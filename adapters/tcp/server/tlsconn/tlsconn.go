// Package tlsconn terminates TLS for gnet connections with the standard crypto/tls, without
// a fork of either (DESIGN §1, gnet issues #496/#749: gnet has no TLS of its own).
//
// crypto/tls wants a blocking net.Conn; gnet hands bytes to an event loop that must never
// block. The bridge is an in-memory pipe under a tls.Conn:
//
//   - Handshake: runs on a short-lived goroutine of its own, reading from the pipe, which the
//     event loop feeds from OnTraffic; the goroutine blocks, the loop never does. A
//     would-block error must not reach tls.Conn here: it would fail the handshake for good.
//   - After the handshake, the event loop decrypts in place: it lends the bytes it just
//     received to the pipe and reads records until the pipe reports would-block, a
//     temporary net.Error after which tls.Conn keeps its state and partial records.
//   - Writes, from any goroutine, encrypt into the pipe's buffer and hand the records to
//     gnet's AsyncWrite under one lock, so records reach the socket in sequence order.
package tlsconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/panjf2000/gnet/v2"
)

// link is what the bridge uses of a gnet.Conn.
type link interface {
	AsyncWrite(buf []byte, cb gnet.AsyncCallback) error
	Wake(cb gnet.AsyncCallback) error
	Close() error
	EventLoop() gnet.EventLoop
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
}

const (
	// minReadSpace is the free room Read keeps in its destination: tls.Conn hands out one
	// record's plaintext per call (up to 16 KiB), a smaller room only costs more calls.
	minReadSpace = 4 << 10
	// readGrowth is how much Read grows its destination when room runs low.
	readGrowth = 16 << 10
	// maxKeptScratch bounds the joined-write buffers kept for reuse: one whole frame.
	maxKeptScratch = 64<<10 + 64
)

// ErrHandshakeIncomplete is returned by writes attempted before the handshake finished.
var ErrHandshakeIncomplete = errors.New("tlsconn: handshake not complete")

// Terminator makes the TLS side of connections that share one configuration.
type Terminator struct {
	config *tls.Config
	// scratch holds buffers that join a frame's header and body, so a push (its body shared by
	// every recipient) is encrypted as one record instead of two.
	scratch sync.Pool
}

// NewTerminator serves cfg, raised to TLS 1.2 at least.
func NewTerminator(cfg *tls.Config) *Terminator {
	cfg = cfg.Clone()
	cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
	return &Terminator{
		config:  cfg,
		scratch: sync.Pool{New: func() any { return new([]byte) }},
	}
}

// Server starts the server side of TLS on gc. Nothing happens until Handshake runs.
func (t *Terminator) Server(gc link) *Conn {
	p := newPipe(gc)
	return &Conn{t: t, link: gc, pipe: p, tls: tls.Server(p, t.config)}
}

// Conn is one TLS connection over gnet. It implements the writing side that session.Conn
// needs, so responses and pushes take the same path in both listener modes.
type Conn struct {
	t    *Terminator
	link link
	pipe *pipe
	tls  *tls.Conn
	// wmu makes encrypting and queuing one step: tls.Conn numbers records as it encrypts,
	// and gnet must receive them in that order.
	wmu sync.Mutex
}

// Feed queues ciphertext for the handshake; b is copied. It returns how many bytes wait
// for the handshake (0 once it is over), so the caller can refuse a client that floods it.
// Event loop, until the caller sees the handshake's end.
func (c *Conn) Feed(b []byte) int { return c.pipe.feed(b) }

// Handshake runs the server handshake. Call it on its own goroutine: it blocks until Feed
// supplied the client's flights, ctx ends or Release is called. On success the connection
// switches to non-blocking reads.
func (c *Conn) Handshake(ctx context.Context) error {
	if err := c.tls.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("tls handshake: %w", err)
	}
	c.pipe.handshakeDone()
	return nil
}

// State is the negotiated version, suite and resumption, for the connection's log line.
func (c *Conn) State() tls.ConnectionState { return c.tls.ConnectionState() }

// Read decrypts ciphertext, after any bytes fed earlier, and appends the plaintext to dst.
// ciphertext is only read during the call. Event loop only, after Handshake succeeded. An
// error (a bad record, the peer's close_notify as io.EOF) is final: close the connection.
func (c *Conn) Read(dst, ciphertext []byte) ([]byte, error) {
	c.pipe.lend(ciphertext)
	defer c.pipe.unlend()
	for {
		if cap(dst)-len(dst) < minReadSpace {
			dst = slices.Grow(dst, readGrowth)
		}
		n, err := c.tls.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == nil {
			continue
		}
		// Reading may have produced records to send (a KeyUpdate answer, an alert).
		flushErr := c.flush()
		if errors.Is(err, errWouldBlock) {
			return dst, flushErr
		}
		return dst, fmt.Errorf("tls read: %w", err)
	}
}

// flush queues records written outside AsyncWrite.
func (c *Conn) flush() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if out := c.pipe.take(); len(out) > 0 {
		return c.link.AsyncWrite(out, nil)
	}
	return nil
}

// AsyncWrite encrypts plain as it is now and queues the records; cb runs on the event loop
// once they are written, as with gnet.Conn.AsyncWrite. Any goroutine.
func (c *Conn) AsyncWrite(plain []byte, cb gnet.AsyncCallback) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.pipe.established() {
		return ErrHandshakeIncomplete
	}
	if _, err := c.tls.Write(plain); err != nil {
		c.pipe.take() // whatever part was encrypted can no longer be sent in order
		return fmt.Errorf("tls write: %w", err)
	}
	return c.link.AsyncWrite(c.pipe.take(), cb)
}

// AsyncWritev is AsyncWrite of the concatenation of bufs, encrypted as one record when it fits.
func (c *Conn) AsyncWritev(bufs [][]byte, cb gnet.AsyncCallback) error {
	if len(bufs) == 1 {
		return c.AsyncWrite(bufs[0], cb)
	}
	held := c.t.scratch.Get().(*[]byte)
	joined := (*held)[:0]
	for _, b := range bufs {
		joined = append(joined, b...)
	}
	err := c.AsyncWrite(joined, cb)
	if cap(joined) <= maxKeptScratch {
		*held = joined[:0]
		c.t.scratch.Put(held)
	}
	return err
}

// Wake asks the event loop to run OnTraffic for this connection, as gnet.Conn.Wake.
func (c *Conn) Wake(cb gnet.AsyncCallback) error { return c.link.Wake(cb) }

// EventLoop is the event loop of the gnet connection.
func (c *Conn) EventLoop() gnet.EventLoop { return c.link.EventLoop() }

// Close closes the gnet connection, as gnet.Conn.Close.
func (c *Conn) Close() error { return c.link.Close() }

// Release ends a handshake still waiting for bytes. Call it when the connection has closed.
func (c *Conn) Release() { _ = c.pipe.Close() }
