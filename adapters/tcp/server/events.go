package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/panjf2000/gnet/v2"

	"imd/adapters/tcp/frame"
	"imd/adapters/tcp/proxyhdr"
	"imd/adapters/tcp/server/session"
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

func (e *events) OnBoot(eng gnet.Engine) gnet.Action {
	s := e.s
	s.bootMu.Lock()
	defer s.bootMu.Unlock()
	if s.aborted {
		return gnet.Shutdown
	}
	url, _ := s.cfg.listenURL() // validated by Start
	addr, err := boundAddr(eng, url)
	if err != nil {
		s.log.Error("tcp listener address unknown", "err", err)
		return gnet.Shutdown
	}
	s.engine, s.addr, s.booted = eng, addr, true
	close(s.bootCh)
	return gnet.None
}

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
	c.out = session.NewConn(c.id, gc, session.Limits{Bytes: s.cfg.OutboundBytes, Frames: s.cfg.OutboundFrames}, s.deps.Metrics)
	c.ctx, c.cancel = context.WithCancel(s.base)
	c.touch(now)
	if s.cfg.ProxyProtocol {
		c.store(phaseProxy)
	} else {
		c.realIP = c.peer
		c.store(phaseConnected)
		s.logAccepted(c)
	}
	gc.SetContext(c)
	s.conns.Store(c.id, c)
	s.deps.Metrics.Set("tcp_connections", float64(s.open.Add(1)))
	return nil, gnet.None
}

func (e *events) OnClose(gc gnet.Conn, err error) gnet.Action {
	s := e.s
	c, ok := gc.Context().(*connection)
	if !ok {
		return gnet.None
	}
	c.store(phaseClosed)
	c.cancel()
	s.sessions.Unbind(c.out)
	s.conns.Delete(c.id)
	s.deps.Metrics.Set("tcp_connections", float64(s.open.Add(-1)))
	id := c.out.Identity()
	s.log.Debug("connection closed", "connection_id", c.id, "real_ip", c.realIP.String(),
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
	for {
		buffered := gc.InboundBuffered()
		head, err := gc.Peek(min(buffered, frame.HeaderLen))
		if err != nil {
			return gnet.None
		}
		h, err := frame.ParseHeader(head)
		if errors.Is(err, frame.ErrIncomplete) {
			break
		}
		if err != nil {
			return s.reject(c, err)
		}
		size := frame.HeaderLen + int(h.BodyLen)
		if buffered < size {
			break
		}
		buf, err := gc.Peek(size)
		if err != nil {
			return gnet.None
		}
		f, _, err := frame.Decode(buf)
		if err != nil {
			return s.reject(c, err)
		}
		_, _ = gc.Discard(size)
		s.deps.Metrics.Inc("tcp_frames_in_total")
		s.dispatch(c, f)
	}
	if unread := gc.OutboundBuffered(); unread > unreadFactor*s.cfg.OutboundBytes {
		s.log.Warn("closing connection that does not read its responses", "connection_id", c.id,
			"real_ip", c.realIP.String(), "unread_bytes", unread)
		return gnet.Close
	}
	return gnet.None
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
		c.realIP = src.Addr()
	} else {
		c.realIP = c.peer // LOCAL/UNKNOWN: the proxy's own connection, e.g. a health check
	}
	if !c.advance(phaseProxy, phaseConnected) {
		return false, gnet.Close // the PROXY timeout fired meanwhile
	}
	s.logAccepted(c)
	return true, gnet.None
}

func (s *Server) logAccepted(c *connection) {
	s.log.Debug("connection accepted", "connection_id", c.id, "real_ip", c.realIP.String(), "peer", c.peer.String())
}

func (s *Server) reject(c *connection, err error) gnet.Action {
	s.log.Warn("bad frame, closing", "connection_id", c.id, "real_ip", c.realIP.String(), "err", err)
	return gnet.Close
}

// OnTick enforces ProxyTimeout and IdleTimeout. It runs on gnet's ticker goroutine, so it
// touches connections only through what is safe off the loop: atomics and Close.
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
	s.log.Log(s.base, level, msg, "connection_id", c.id, "peer", c.peer.String())
	_ = c.gc.Close()
}
