// Package session is the transport's view of who is connected: the outbound side of every
// client connection and the registry of authenticated devices that the deliver worker pushes
// to (ports.Pusher). Nothing here blocks: a slow client loses pushes, never the server's time.
package session

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
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
	// Bytes counts frames handed to the link but not yet written plus what the transport
	// holds unsent.
	Bytes int
	// Frames counts frames handed to the link that it has not written yet.
	Frames int
}

// Link is the socket under a Conn, whatever the transport: on TCP the gnet connection (or the
// TLS bridge over it), whose event loop runs the writes; on WebSocket the connection's writer
// goroutine. Writes are queued, never waited for.
type Link interface {
	// Write queues bufs as one write. done runs once they went to the socket or failed;
	// unsent is what the transport still holds unsent after them (meaningful when err is nil).
	Write(bufs [][]byte, done func(unsent int, err error)) error
	// Wake asks the transport to report its unsent bytes through Conn.Observe again; done runs
	// once it has been asked.
	Wake(done func()) error
	// Close closes the connection after what was queued before it, as far as it can go.
	Close() error
	// Loop is the event loop that runs the link's writes, shared with other links; nil when
	// the link has its own writer, which leaves its writes unpaced.
	Loop() Loop
}

// Loop is an event loop running the writes of many links. Run queues f behind the writes
// already handed to the loop.
type Loop interface {
	Run(ctx context.Context, f func()) error
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
	// buffered is the transport's own unsent bytes (gnet's outbound buffer) when it last
	// looked. gnet's buffer is unbounded, so without it a client that stops reading would
	// grow the server's memory without limit.
	buffered   atomic.Int64
	refreshing atomic.Bool
	pushSeq    atomic.Uint32
	closing    atomic.Bool

	acks   acks   // MESSAGE pushes waiting for PUSH_ACK
	pushed pushed // MESSAGE pushes queued, per topic: a repeated one is dropped

	// subscribed: the live push kinds named at AUTH; set before Bind publishes the connection.
	subscribed []delivery.Kind

	// holding: between HoldPushes and ReleasePushes, pushes wait in held, in order. AUTH binds
	// the device before its answer is queued (so its presence is claimed before the client
	// learns it is signed in), and a push that finds it bound then must not reach the socket
	// before that answer: the client reads its AUTH answer first.
	holding atomic.Bool
	holdMu  sync.Mutex
	held    [][]byte
}

// NewConn wraps link. id is the connection id used in logs.
func NewConn(id uint64, link Link, limits Limits, metrics ports.Metrics) *Conn {
	return &Conn{id: id, link: link, limits: limits, metrics: metrics}
}

// Subscribe records which of the live pushes named at AUTH this server sends to c and answers
// them in the order asked; unknown names are left out, so a newer client meets an older
// server (docs/PROTOCOL.md, AUTH). Call it before Bind, which publishes c to the pushers.
func (c *Conn) Subscribe(names []string) []string {
	var kept []string
	for _, name := range names {
		if k := delivery.Kind(name); k.Subscribed() && !slices.Contains(c.subscribed, k) {
			c.subscribed = append(c.subscribed, k)
			kept = append(kept, name)
		}
	}
	return kept
}

// takes reports whether pushes of kind k go to c: those of the base protocol always, the live
// ones only when subscribed (DESIGN §13).
func (c *Conn) takes(k delivery.Kind) bool {
	return !k.Subscribed() || slices.Contains(c.subscribed, k)
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

// Observe records the transport's unsent bytes (gnet's outbound buffer). On gnet, call it on
// the connection's event loop only, where OutboundBuffered is safe to read.
func (c *Conn) Observe(outboundBuffered int) { c.buffered.Store(int64(outboundBuffered)) }

// Send queues a whole encoded frame, bypassing the limits: responses are never dropped.
func (c *Conn) Send(f []byte) error {
	n := int64(len(f))
	c.reserve(n)
	if err := c.link.Write([][]byte{f}, c.written(1, n)); err != nil {
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
	if c.holding.Load() {
		c.holdMu.Lock()
		defer c.holdMu.Unlock()
		if c.holding.Load() {
			return c.hold(bufs)
		}
	}
	return c.offerNow(bufs)
}

// hold keeps push frames (header, body pairs) until ReleasePushes, up to the connection's
// frame limit, and returns how many it kept. Call it with holdMu held.
func (c *Conn) hold(bufs [][]byte) int {
	frames := max(0, min(len(bufs)/2, c.limits.Frames-len(c.held)/2))
	c.held = append(c.held, bufs[:2*frames]...)
	return frames
}

// HoldPushes makes pushes wait until ReleasePushes (AUTH, between binding the device and
// queueing the answer).
func (c *Conn) HoldPushes() { c.holding.Store(true) }

// ReleasePushes queues the pushes held since HoldPushes, in order, behind what was queued
// meanwhile (the AUTH answer), and lets later ones through.
func (c *Conn) ReleasePushes() {
	c.holdMu.Lock()
	defer c.holdMu.Unlock()
	if len(c.held) > 0 {
		c.offerNow(c.held)
		c.held = nil
	}
	c.holding.Store(false)
}

// offerNow is offer past the hold.
func (c *Conn) offerNow(bufs [][]byte) int {
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
	if err := c.link.Write(bufs[:2*took], c.written(took, size)); err != nil {
		c.release(took, size)
		return 0
	}
	c.metrics.Add("tcp_frames_out_total", float64(took))
	return took
}

// Kick sends KICK {reason} and closes the connection once the frame is handed to the socket.
// It acts once; later calls do nothing. Registry.Kick also unbinds the device; this alone
// does not (the connection's close does).
func (c *Conn) Kick(reason string) {
	if !c.closing.CompareAndSwap(false, true) {
		return
	}
	body, err := wire.OK(0, wire.Kick{Reason: reason})
	var f []byte
	if err == nil {
		f, err = frame.Append(nil, wire.CmdKick, 0, c.nextPushSeq(), body, 0)
	}
	if err != nil {
		_ = c.link.Close()
		return
	}
	n := int64(len(f))
	c.reserve(n)
	err = c.link.Write([][]byte{f}, func(int, error) {
		c.release(1, n)
		// The close comes after this write, and the transport flushes what it can first.
		_ = c.link.Close()
	})
	if err != nil {
		c.release(1, n)
		_ = c.link.Close()
		return
	}
	c.metrics.Inc("tcp_frames_out_total")
}

// Ack settles the MESSAGE push with sequence id seq (PUSH_ACK) and returns its message,
// reporting whether one was outstanding: what a delivered receipt tells (issue 31). Any
// goroutine.
func (c *Conn) Ack(seq uint32) (*message.Message, bool) { return c.acks.ack(seq) }

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

// written returns the Write callback of frames frames of n bytes in all.
func (c *Conn) written(frames int, n int64) func(unsent int, err error) {
	return func(unsent int, err error) {
		c.release(frames, n)
		if err == nil {
			c.Observe(unsent)
		}
	}
}

// refresh asks the transport to look at its unsent bytes again. After drops nothing else may
// be written, so without it a client that caught up would stay marked full until it sent
// something. One wake at a time.
func (c *Conn) refresh() {
	if !c.refreshing.CompareAndSwap(false, true) {
		return
	}
	err := c.link.Wake(func() { c.refreshing.Store(false) })
	if err != nil {
		c.refreshing.Store(false)
	}
}
