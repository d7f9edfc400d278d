package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A node restarted on its port while connections of the previous run linger in TIME_WAIT
// listens at once, with keep-alive on what it accepts.
func TestRestartOnAPortWithTimeWaitListens(t *testing.T) {
	first := start(t, Config{KeepAlive: 17 * time.Second}, Deps{})
	addr := first.srv.Addr().String()
	c := first.dial(t)
	c.auth(1, 1)
	// Stop closes the connection from the server's side, which leaves it in TIME_WAIT there.
	if err := first.srv.Stop(context.WithoutCancel(t.Context())); err != nil {
		t.Fatal(err)
	}
	c.expectKick(kickReasonShutdown)
	_ = c.nc.Close()

	second := start(t, Config{Addr: addr, KeepAlive: 17 * time.Second}, Deps{})
	again := second.dial(t)
	again.auth(1, 1)

	fd, err := second.srv.engine.Dup()
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	for _, o := range []struct {
		name       string
		level, opt int
		want       int
	}{
		{"SO_KEEPALIVE", syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
		{"TCP_KEEPIDLE", syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, 17},
		{"TCP_KEEPINTVL", syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, 3},
	} {
		if got, err := syscall.GetsockoptInt(fd, o.level, o.opt); err != nil || got != o.want {
			t.Errorf("listener %s = %d, %v; want %d", o.name, got, err, o.want)
		}
	}
}

// A port another socket listens on is refused with the real cause, not a later setsockopt's.
func TestStartOnATakenPortSaysAddressInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	srv := New(Config{Addr: taken.Addr().String()}, Deps{Metrics: newFakeMetrics()}, slog.New(&logCapture{}))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err = srv.Start(ctx)
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("start on a taken port: %v; want address already in use", err)
	}
	if srv.Serving() == nil {
		t.Fatal("a server that never listened reports serving")
	}
}

// When gnet's accept fails the engine ends; the server stops reporting serving and says the
// listener is lost, so the node leaves readiness and exits.
func TestAcceptFailureLosesTheListener(t *testing.T) {
	h := start(t, Config{}, Deps{})
	if err := h.srv.Serving(); err != nil {
		t.Fatalf("serving after start: %v", err)
	}
	fd := listeningSocket(t, h.srv.Addr().(*net.TCPAddr))
	// shutdown(2) on a listening socket makes its accept fail with EINVAL, as seen in the field.
	if err := syscall.Shutdown(fd, syscall.SHUT_RD); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Close(fd)
	// The kernel wakes the listener's poller only on a connection attempt.
	if nc, err := net.DialTimeout("tcp", h.srv.Addr().String(), time.Second); err == nil {
		_ = nc.Close()
	}
	select {
	case <-h.srv.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the listener's failure was not reported")
	}
	if h.srv.Serving() == nil {
		t.Fatal("serving after the listener failed")
	}
	if h.logs.find("tcp listener stopped accepting") == nil {
		t.Fatal("the failure is not logged")
	}
}

// Stop is not a loss.
func TestStopIsNotALostListener(t *testing.T) {
	h := start(t, Config{}, Deps{})
	if err := h.srv.Stop(context.WithoutCancel(t.Context())); err != nil {
		t.Fatal(err)
	}
	// Stop returns after the engine's end was noted: a loss would be reported by now.
	select {
	case <-h.srv.Lost():
		t.Fatal("Stop reported as a lost listener")
	default:
	}
	if h.srv.Serving() == nil {
		t.Fatal("serving after Stop")
	}
}

// listeningSocket finds this process's descriptor listening on addr and duplicates it. It
// does not go through gnet's Engine.Dup, which reads the listener without the lock gnet's
// own close takes once the engine ends.
func listeningSocket(t *testing.T, addr *net.TCPAddr) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if on, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err != nil || on != 1 {
			continue
		}
		if sa, err := syscall.Getsockname(fd); err == nil {
			if a, ok := sa.(*syscall.SockaddrInet4); ok && a.Port == addr.Port && net.IP(a.Addr[:]).Equal(addr.IP) {
				dup, err := syscall.Dup(fd)
				if err != nil {
					t.Fatal(err)
				}
				return dup
			}
		}
	}
	t.Fatalf("no descriptor listens on %v", addr)
	return -1
}
