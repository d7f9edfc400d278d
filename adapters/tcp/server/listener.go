package server

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/panjf2000/gnet/v2"
)

// boot runs as gnet's OnBoot, after the listener is bound and before any event loop runs: it
// checks that the engine really holds a listening socket, sets its keep-alive and lets Start
// return.
func (s *Server) boot(eng gnet.Engine) gnet.Action {
	s.bootMu.Lock()
	defer s.bootMu.Unlock()
	if s.aborted {
		return gnet.Shutdown
	}
	url, _ := s.cfg.listenURL() // validated by Start
	addr, err := s.prepareListener(eng, url)
	if err != nil {
		s.log.Error("tcp listener unusable", "addr", s.cfg.Addr, "err", err)
		return gnet.Shutdown
	}
	s.engine, s.addr, s.booted = eng, addr, true
	close(s.bootCh)
	return gnet.None
}

// errNotListening: the engine's descriptor is not a listening socket.
var errNotListening = errors.New("descriptor is not a listening socket")

// prepareListener reads the listener's real address (gnet does not expose it), after checking
// that it listens, and sets TCP keep-alive on it: Linux copies it to every accepted
// connection.
func (s *Server) prepareListener(eng gnet.Engine, listenURL string) (net.Addr, error) {
	fd, err := eng.Dup()
	if err != nil {
		return nil, fmt.Errorf("dup listener: %w", err)
	}
	defer syscall.Close(fd)
	if on, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err != nil || on != 1 {
		return nil, errors.Join(errNotListening, err)
	}
	if path, ok := strings.CutPrefix(listenURL, "unix://"); ok {
		return &net.UnixAddr{Name: path, Net: "unix"}, nil
	}
	if err := setKeepAlive(fd, int(s.cfg.KeepAlive.Seconds())); err != nil {
		return nil, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return nil, fmt.Errorf("getsockname: %w", err)
	}
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}, nil
	case *syscall.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}, nil
	}
	return nil, fmt.Errorf("unexpected listener address %T", sa)
}

// setKeepAlive probes an idle connection after idle seconds, then every fifth of it, and gives
// up after five unanswered probes (what gnet's WithTCPKeepAlive sets).
func setKeepAlive(fd, idle int) error {
	idle = max(idle, 1)
	for _, o := range []struct {
		level, name, value int
	}{
		{syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
		{syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, idle},
		{syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, max(idle/5, 1)},
		{syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, 5},
	} {
		if err := syscall.SetsockoptInt(fd, o.level, o.name, o.value); err != nil {
			return fmt.Errorf("set keep-alive on the listener: %w", err)
		}
	}
	return nil
}

// noteEngineEnd runs when gnet.Run has returned. An engine that booted and ended without Stop
// asking (gnet ends it when accept fails) leaves a process whose frame listener is gone.
func (s *Server) noteEngineEnd() {
	s.bootMu.Lock()
	booted := s.booted
	s.bootMu.Unlock()
	if !booted || s.stopping.Load() {
		return
	}
	s.log.Error("tcp listener stopped accepting", "addr", s.cfg.Addr, "run_err", s.runErr)
	close(s.lost)
}

// Lost is closed when the listener stopped accepting on its own; whoever runs the server then
// ends the process rather than keep a node that cannot take clients.
func (s *Server) Lost() <-chan struct{} { return s.lost }

// Serving reports nil while the listener accepts connections: after Start, before Stop, and
// as long as the engine runs. It is the frame listener's part of readiness.
func (s *Server) Serving() error {
	s.bootMu.Lock()
	booted := s.booted
	s.bootMu.Unlock()
	switch {
	case !booted:
		return errors.New("tcp listener not started")
	case s.stopping.Load():
		return errors.New("tcp listener stopping")
	}
	select {
	case <-s.done:
		return errors.New("tcp listener stopped accepting")
	default:
		return nil
	}
}
