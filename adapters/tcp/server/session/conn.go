// Package session is the transport's view of who is connected: the outbound side of every
// client connection and the registry of authenticated devices that the deliver worker pushes
// to (ports.Pusher). Nothing here blocks: a slow client loses pushes, never the server's time.
package session

import (
	"fmt"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/adapters/protocol/frame"
	"github.com/imdhq/imd/ports"
)

// Identity is who an authenticated connection acts for.
type Identity struct {
	Tenant string
	User   int64
	Device uint64
}

// Limits bound what may wait to be sent on one connection before pushes are dropped.
type Limits struct {
	// Bytes counts frames handed to gnet but not yet written plus gnet's own outbound buffer.
	Bytes int
	// Frames counts frames handed to gnet that its event loop has not taken yet.
	Frames int
}

// Link is the socket under a Conn: the gnet connection itself when frames travel in
// plaintext, the TLS bridge when the server terminates TLS. Both encrypt-or-not and queue a
// buffer for the connection's event loop, which runs the callbacks.
type Link interface {
	AsyncWrite(buf []byte, cb gnet.AsyncCallback) error
	AsyncWritev(bufs [][]byte, cb gnet.AsyncCallback) error
	Wake(cb gnet.AsyncCallback) error
	Close() error
	// EventLoop is the loop that runs the connection's writes; nil when there is none (a
	// link in tests), which leaves its writes unpaced.
	EventLoop() gnet.EventLoop
}

// Conn is the write side of one client connection. Responses are always queued (the client
// asked for them and waits); pushes are dropped once the connection is over its Limits.
type Conn struct {
	id      uint64
	link    Link
	limits  Limits
	metrics ports.Metrics

	// identity is set by Registry.Bind on a worker while the event loop may be reading it.
	identity atomic.Pointer[Identity]

	// queuedBytes/queuedFrames: handed to AsyncWrite, callback not run yet.
	queuedBytes  atomic.Int64
	queuedFrames atomic.Int64
	// buffered is gnet's outbound buffer (accepted but unsent bytes) when the event loop last
	// looked. gnet's buffer is unbounded, so without it a client that stops reading would
	// grow the server's memory without limit.
	buffered   atomic.Int64
	refreshing atomic.Bool
	pushSeq    atomic.Uint32
	closing    atomic.Bool

	acks acks // MESSAGE pushes waiting for PUSH_ACK
}

// NewConn wraps link. id is the connection id used in logs.
func NewConn(id uint64, link Link, limits Limits, metrics ports.Metrics) *Conn {
	return &Conn{id: id, link: link, limits: limits, metrics: metrics}
}

// ID is the connection id.
func (c *Conn) ID() uint64 { return c.id }

// Identity is who the connection acts for; zero until bound.
func (c *Conn) Identity() Identity {
	if id := c.identity.Load(); id != nil {
		return *id
	}
	return Identity{}
}

// Closing reports that the connection was kicked and is being closed; its input is ignored.
func (c *Conn) Closing() bool { return c.closing.Load() }

// Observe records gnet's outbound buffer size. Call it on the connection's event loop only,
// where OutboundBuffered is safe to read.
func (c *Conn) Observe(outboundBuffered int) { c.buffered.Store(int64(outboundBuffered)) }

// Send queues a whole encoded frame, bypassing the limits: responses are never dropped.
func (c *Conn) Send(f []byte) error {
	n := int64(len(f))
	c.reserve(n)
	if err := c.link.AsyncWrite(f, c.written(1, n)); err != nil {
		c.release(1, n)
		return fmt.Errorf("session: queue frame on connection %d: %w", c.id, err)
	}
	c.metrics.Inc("tcp_frames_out_total")
	return nil
}

// offer queues push frames, each a header of its own and a body shared with other
// connections, in one write: bufs holds header, body pairs. One write for all of them is one
// event-loop task and one writev, where a frame each cost a syscall per frame. The connection
// takes the frames up to the first one over its limits, which it drops with all after it, and
// offer returns how many it took.
func (c *Conn) offer(bufs [][]byte) int {
	took, size := 0, int64(0)
	for i := 0; i+1 < len(bufs); i += 2 {
		n := int64(len(bufs[i]) + len(bufs[i+1]))
		frames, bytes := c.reserve(n)
		if frames > int64(c.limits.Frames) || bytes+c.buffered.Load() > int64(c.limits.Bytes) {
			c.release(1, n)
			c.refresh()
			break
		}
		took++
		size += n
	}
	if took == 0 {
		return 0
	}
	if err := c.link.AsyncWritev(bufs[:2*took], c.written(took, size)); err != nil {
		c.release(took, size)
		return 0
	}
	for range took {
		c.metrics.Inc("tcp_frames_out_total")
	}
	return took
}

// Kick sends KICK {reason} and closes the connection once the frame is handed to the socket.
// It acts once; later calls do nothing. Registry.Kick also unbinds the device; this alone
// does not (the connection's close does).
func (c *Conn) Kick(reason string) {
	if !c.closing.CompareAndSwap(false, true) {
		return
	}
	body, err := protocol.OK(0, protocol.Kick{Reason: reason})
	var f []byte
	if err == nil {
		f, err = frame.Append(nil, protocol.CmdKick, 0, c.nextPushSeq(), body, 0)
	}
	if err != nil {
		_ = c.link.Close()
		return
	}
	n := int64(len(f))
	c.reserve(n)
	err = c.link.AsyncWrite(f, func(gc gnet.Conn, err error) error {
		c.release(1, n)
		// Close runs on the loop after this write, and gnet flushes what it can before closing.
		return gc.Close()
	})
	if err != nil {
		c.release(1, n)
		_ = c.link.Close()
		return
	}
	c.metrics.Inc("tcp_frames_out_total")
}

// Ack settles the MESSAGE push with sequence id seq (PUSH_ACK) and reports whether one was
// outstanding. Any goroutine.
func (c *Conn) Ack(seq uint32) bool { return c.acks.ack(seq) }

// nextPushSeq numbers server-initiated frames of this connection (PROTOCOL §2: pushes use
// their own sequence ids; the client echoes one in PUSH_ACK).
func (c *Conn) nextPushSeq() uint32 { return c.pushSeq.Add(1) }

func (c *Conn) reserve(n int64) (frames, bytes int64) {
	return c.queuedFrames.Add(1), c.queuedBytes.Add(n)
}

func (c *Conn) release(frames int, n int64) {
	c.queuedFrames.Add(-int64(frames))
	c.queuedBytes.Add(-n)
}

// written returns the AsyncWrite callback of frames frames of n bytes in all. It runs on the
// event loop, so it may read gnet's outbound buffer — but only after a successful write: on
// error the connection may already be released.
func (c *Conn) written(frames int, n int64) gnet.AsyncCallback {
	return func(gc gnet.Conn, err error) error {
		c.release(frames, n)
		if err == nil {
			c.Observe(gc.OutboundBuffered())
		}
		return nil
	}
}

// refresh asks the event loop to look at gnet's outbound buffer again. After drops nothing
// else may be written, so without it a client that caught up would stay marked full until it
// sent something. Wake runs the traffic handler, which calls Observe; one wake at a time.
func (c *Conn) refresh() {
	if !c.refreshing.CompareAndSwap(false, true) {
		return
	}
	err := c.link.Wake(func(gnet.Conn, error) error {
		c.refreshing.Store(false)
		return nil
	})
	if err != nil {
		c.refreshing.Store(false)
	}
}
