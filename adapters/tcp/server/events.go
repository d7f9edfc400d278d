package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/imdhq/imd/adapters/protocol/proxyhdr"
	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/clients/go/frame"
)

// unreadFactor: a client whose unread responses exceed this many outbound limits is sending
// requests without reading the answers; it is closed before it exhausts the server's memory.
// Pushes never get there: they are dropped at one limit.
const unreadFactor = 4

// events is the gnet event handler. Its methods run on event loops (OnTick on gnet's ticker
// goroutine) and never block: anything that may wait goes to the task pool.
type events struct {
	gnet.BuiltinEventEngine
	s *Server
}

func (e *events) OnBoot(eng gnet.Engine) gnet.Action { return e.s.boot(eng) }

func (e *events) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	s := e.s
	if s.stopping.Load() {
		return nil, gnet.Close
	}
	now := time.Now()
	c := &connection{
		id:     s.nextConnID.Add(1),
		gc:     gc,
		peer:   peerAddr(gc.RemoteAddr()),
		opened: now,
	}
	var w gnetWriter = gc
	if s.tls != nil {
		c.tls = s.tls.Server(gc)
		w = c.tls
	}
	c.out = session.NewConn(c.id, link{w}, session.Limits{Bytes: s.cfg.OutboundBytes, Frames: s.cfg.OutboundFrames}, s.deps.Metrics)
	c.client = s.commands.NewClient("tcp", c.out)
	c.touch(now)
	gc.SetContext(c)
	s.conns.Store(c.id, c)
	s.deps.Metrics.Set("tcp_connections", float64(s.open.Add(1)))
	// A new connection starts in phaseProxy, the zero phase.
	if !s.cfg.ProxyProtocol {
		c.client.SetRealIP(c.peer)
		s.secure(c, phaseProxy)
	}
	return nil, gnet.None
}

// secure moves a connection whose client address is known on to frames: through a TLS
// handshake in native mode, at once otherwise. from is the phase it leaves.
func (s *Server) secure(c *connection, from phase) bool {
	if c.tls == nil {
		if !c.advance(from, phaseConnected) {
			return false
		}
		s.logAccepted(c)
		return true
	}
	if !c.advance(from, phaseHandshake) {
		return false
	}
	go s.handshake(c)
	return true
}

// handshake runs c's TLS handshake on its own goroutine, fed by OnTraffic, then wakes the
// event loop: the client's first frames may have arrived with its Finished and wait
// undecrypted in the TLS pipe.
func (s *Server) handshake(c *connection) {
	ctx, cancel := context.WithTimeout(c.client.Context(), s.cfg.HandshakeTimeout)
	defer cancel()
	if err := c.tls.Handshake(ctx); err != nil {
		if c.load() != phaseClosed {
			s.deps.Metrics.Inc("tcp_tls_handshake_failures_total")
			// Debug: scanners and dropped mobile connections fail handshakes all day; the
			// counter is what an operator watches.
			s.log.Debug("TLS handshake failed, closing", "connection_id", c.id, "real_ip", c.client.RealIP().String(), "err", err)
		}
		_ = c.gc.Close()
		return
	}
	if !c.advance(phaseHandshake, phaseConnected) {
		return // closed meanwhile
	}
	s.logAccepted(c)
	if err := c.gc.Wake(nil); err != nil {
		_ = c.gc.Close()
	}
}

func (e *events) OnClose(gc gnet.Conn, err error) gnet.Action {
	s := e.s
	c, ok := gc.Context().(*connection)
	if !ok {
		return gnet.None
	}
	c.store(phaseClosed)
	if c.tls != nil {
		c.tls.Release()
	}
	c.partial = nil
	s.commands.Close(c.client)
	s.conns.Delete(c.id)
	s.deps.Metrics.Set("tcp_connections", float64(s.open.Add(-1)))
	id := c.out.Identity()
	s.log.Debug("connection closed", "connection_id", c.id, "real_ip", c.client.RealIP().String(),
		"user_id", id.User, "device_id", id.Device, "err", err)
	return gnet.None
}

// OnTraffic decodes every whole frame buffered so far and dispatches it. A frame the decoder
// rejects cannot be skipped (the stream has no resync point), so the connection closes.
func (e *events) OnTraffic(gc gnet.Conn) gnet.Action {
	s := e.s
	started := time.Now()
	defer func() { s.deps.Metrics.Observe("eventloop_react_seconds", time.Since(started).Seconds()) }()

	c, ok := gc.Context().(*connection)
	if !ok {
		return gnet.Close
	}
	c.touch(started)
	c.out.Observe(gc.OutboundBuffered())
	if c.out.Closing() || c.load() == phaseClosed {
		_, _ = gc.Discard(gc.InboundBuffered())
		return gnet.None
	}
	if c.load() == phaseProxy {
		if done, action := s.readProxy(c, gc); !done {
			return action
		}
	}
	var action gnet.Action
	switch {
	case c.load() == phaseHandshake:
		return s.feedHandshake(c, gc)
	case c.tls != nil:
		action = s.readTLS(c, gc)
	default:
		action = s.readFrames(c, gc)
	}
	if action != gnet.None {
		return action
	}
	if unread := gc.OutboundBuffered(); unread > unreadFactor*s.cfg.OutboundBytes {
		s.log.Warn("closing connection that does not read its responses", "connection_id", c.id,
			"real_ip", c.client.RealIP().String(), "unread_bytes", unread)
		return gnet.Close
	}
	return gnet.None
}

// inbound is where plaintext frames wait: gnet's own buffer in plaintext mode, decrypted
// bytes in TLS mode.
type inbound interface {
	InboundBuffered() int
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
}

// readFrames decodes every whole frame buffered in in and dispatches it. A frame the decoder
// rejects cannot be skipped (the stream has no resync point), so the connection closes. Only
// whole frames are peeked: a large frame arriving in pieces is not copied again per piece.
func (s *Server) readFrames(c *connection, in inbound) gnet.Action {
	for {
		buffered := in.InboundBuffered()
		head, err := in.Peek(min(buffered, frame.HeaderLen))
		if err != nil {
			return gnet.None
		}
		h, err := frame.ParseHeader(head)
		if errors.Is(err, frame.ErrIncomplete) {
			return gnet.None
		}
		if err != nil {
			return s.reject(c, err)
		}
		size := frame.HeaderLen + int(h.BodyLen)
		if buffered < size {
			return gnet.None
		}
		buf, err := in.Peek(size)
		if err != nil {
			return gnet.None
		}
		f, _, err := frame.Decode(buf)
		if err != nil {
			return s.reject(c, err)
		}
		_, _ = in.Discard(size)
		s.deps.Metrics.Inc("tcp_frames_in_total")
		s.commands.Dispatch(c.client, f)
	}
}

// maxHandshakeBytes bounds what a client may send before its handshake completes: a
// ClientHello with every extension fits many times over.
const maxHandshakeBytes = 64 << 10

// feedHandshake hands what arrived to the handshake goroutine.
func (s *Server) feedHandshake(c *connection, gc gnet.Conn) gnet.Action {
	buf, err := gc.Peek(-1)
	if err != nil || len(buf) == 0 {
		return gnet.None
	}
	pending := c.tls.Feed(buf)
	_, _ = gc.Discard(len(buf))
	if pending > maxHandshakeBytes {
		s.log.Warn("TLS client sent too much before its handshake completed, closing", "connection_id", c.id,
			"real_ip", c.client.RealIP().String(), "bytes", pending)
		return gnet.Close
	}
	return gnet.None
}

// maxLentPlain bounds the decryption buffers kept for reuse.
const maxLentPlain = 256 << 10

// readTLS decrypts what arrived and handles the frames in it. Decryption goes into a buffer
// lent for the call; only the bytes of an incomplete frame stay with the connection, so idle
// TLS connections hold no plaintext buffer.
func (s *Server) readTLS(c *connection, gc gnet.Conn) gnet.Action {
	ciphertext, err := gc.Peek(-1)
	if err != nil {
		return gnet.None
	}
	lent := c.partial == nil
	var held *[]byte
	buf := c.partial
	if lent {
		held = s.plain.Get().(*[]byte)
		buf = (*held)[:0]
	}
	buf, err = c.tls.Read(buf, ciphertext)
	_, _ = gc.Discard(len(ciphertext))

	action := gnet.Close
	in := &plainInput{buf: buf}
	if err == nil {
		action = s.readFrames(c, in)
	} else if !errors.Is(err, io.EOF) {
		s.log.Debug("TLS read failed, closing", "connection_id", c.id, "real_ip", c.client.RealIP().String(), "err", err)
	}
	switch rest := in.buf; {
	case len(rest) == 0 || action != gnet.None:
		c.partial = nil
	case lent:
		c.partial = append([]byte(nil), rest...)
	default:
		c.partial = append(buf[:0], rest...) // compact in place, keeping the grown buffer
	}
	if lent && cap(buf) <= maxLentPlain {
		*held = buf[:0]
		s.plain.Put(held)
	}
	return action
}

// plainInput is decrypted bytes seen as an inbound buffer.
type plainInput struct{ buf []byte }

func (p *plainInput) InboundBuffered() int { return len(p.buf) }

func (p *plainInput) Peek(n int) ([]byte, error) {
	if n > len(p.buf) {
		return nil, io.ErrShortBuffer
	}
	return p.buf[:n], nil
}

func (p *plainInput) Discard(n int) (int, error) {
	n = min(n, len(p.buf))
	p.buf = p.buf[n:]
	return n, nil
}

// readProxy consumes the PROXY header. done=false means stop here and return action: wait
// for more bytes (None) or close.
func (s *Server) readProxy(c *connection, gc gnet.Conn) (done bool, action gnet.Action) {
	buf, err := gc.Peek(gc.InboundBuffered())
	if err != nil {
		return false, gnet.None
	}
	src, n, err := proxyhdr.Parse(buf)
	if errors.Is(err, proxyhdr.ErrIncomplete) {
		return false, gnet.None // the tick enforces ProxyTimeout
	}
	if err != nil {
		s.deps.Metrics.Inc("realip_missing_total")
		s.log.Warn("bad PROXY header, closing", "connection_id", c.id, "peer", c.peer.String(), "err", err)
		return false, gnet.Close
	}
	_, _ = gc.Discard(n)
	if src.IsValid() {
		c.client.SetRealIP(src.Addr())
	} else {
		c.client.SetRealIP(c.peer) // LOCAL/UNKNOWN: the proxy's own connection, e.g. a health check
	}
	if !s.secure(c, phaseProxy) {
		return false, gnet.Close // the PROXY timeout fired meanwhile
	}
	return true, gnet.None
}

func (s *Server) logAccepted(c *connection) {
	if !s.log.Enabled(c.client.Context(), slog.LevelDebug) {
		return
	}
	attrs := []any{"connection_id", c.id, "real_ip", c.client.RealIP().String(), "peer", c.peer.String()}
	if c.tls != nil {
		st := c.tls.State()
		attrs = append(attrs, "tls_version", tls.VersionName(st.Version), "tls_resumed", st.DidResume)
	}
	s.log.Debug("connection accepted", attrs...)
}

func (s *Server) reject(c *connection, err error) gnet.Action {
	s.log.Warn("bad frame, closing", "connection_id", c.id, "real_ip", c.client.RealIP().String(), "err", err)
	return gnet.Close
}

// OnTick enforces ProxyTimeout and IdleTimeout. It runs on gnet's ticker goroutine, so it touches connections only
// through what is safe off the loop: atomics, locks and Close. (The TLS handshake enforces
// its own timeout.)
func (e *events) OnTick() (time.Duration, gnet.Action) {
	s := e.s
	now := time.Now()
	s.conns.Range(func(_, v any) bool {
		c := v.(*connection)
		switch {
		case c.load() == phaseProxy && now.Sub(c.opened) > s.cfg.ProxyTimeout:
			if c.advance(phaseProxy, phaseClosed) {
				s.deps.Metrics.Inc("realip_missing_total")
				s.closeConn(c, slog.LevelWarn, "no PROXY header in time, closing")
			}
		case c.idleFor(now) > s.cfg.IdleTimeout:
			s.closeConn(c, slog.LevelDebug, "idle connection, closing")
		}
		return true
	})
	return s.cfg.tickInterval(), gnet.None
}

func (s *Server) closeConn(c *connection, level slog.Level, msg string) {
	if !c.closeRequested.CompareAndSwap(false, true) {
		return
	}
	s.log.Log(c.client.Context(), level, msg, "connection_id", c.id, "peer", c.peer.String())
	_ = c.gc.Close()
}
