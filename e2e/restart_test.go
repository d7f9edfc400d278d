package e2e

// A crashed or stopped node comes back at once on its ports (issue 19 item 4): connections of
// the previous run left in TIME_WAIT do not block the frame listener, a port really taken is
// refused with its cause, and ready means the frame listener accepts.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
)

// restartBound is how long a restarted node may take to answer frames: generous for a loaded
// 2-core machine, far below the minute a TIME_WAIT lasts.
const restartBound = 20 * time.Second

func TestRestartAfterCrashWithClientsListensAtOnce(t *testing.T) {
	for _, stop := range []struct {
		name string
		do   func(*Server)
	}{
		{"kill -9", (*Server).Kill},
		{"SIGTERM", (*Server).Stop},
	} {
		t.Run(stop.name, func(t *testing.T) {
			srv := Start(t, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := newChat(t, srv, ctx, 19, 3, 3)
			sendN(t, ctx, c.conns[0], c.topic, "before", 2)

			stop.do(srv)
			// The clients see the server go and close their side; the server's side of each
			// connection, which closed first, stays in TIME_WAIT.
			for _, conn := range c.conns {
				select {
				case <-conn.Closed():
				case <-time.After(10 * time.Second):
					t.Fatal("a client did not notice the server's end")
				}
				conn.Close()
			}
			eventually(t, 10*time.Second, "a TIME_WAIT connection on the frame port", func() bool {
				return timeWaitOn(t, srv.TCPAddr) > 0
			})

			began := time.Now()
			srv.Restart()
			t.Logf("ready %v after the restart began", time.Since(began))
			// Ready means the frame listener accepts: a client connects and sends right away.
			token := srv.User(190_001)
			conn, err := client.Dial(ctx, client.Options{Addr: srv.TCPAddr, RequestTimeout: 15 * time.Second})
			if err != nil {
				t.Fatalf("ready, but the frame listener refuses: %v", err)
			}
			defer conn.Close()
			if _, err := conn.Auth(ctx, token, 1); err != nil {
				t.Fatalf("auth after restart: %v", err)
			}
			if _, err := conn.Send(ctx, textMessage(c.topic, "after", "after the restart")); err != nil {
				t.Fatalf("send after restart: %v", err)
			}
			if took := time.Since(began); took > restartBound {
				t.Fatalf("restart took %v to take frames, bound %v", took, restartBound)
			}
			if strings.Contains(srv.Logs(), "bad file descriptor") {
				t.Fatalf("the restart hit a socket error; log:\n%s", srv.logs.tail(4000))
			}
		})
	}
}

// A listener address another process holds ends imd at once, non-zero, saying why.
func TestTakenPortFailsFastWithAClearMessage(t *testing.T) {
	for _, key := range []string{"IMD_TCP_ADDR", "IMD_HTTP_ADDR"} {
		t.Run(key, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			srv := Start(t, Options{ExpectExit: true, Env: map[string]string{key: taken.Addr().String()}})
			if code := srv.WaitExit(restartBound); code == 0 {
				t.Fatalf("imd exited 0 on a taken port; log:\n%s", srv.logs.tail(4000))
			}
			logs := srv.Logs()
			if !strings.Contains(logs, "address already in use") || !strings.Contains(logs, taken.Addr().String()) {
				t.Fatalf("the log does not name the taken address and its cause:\n%s", srv.logs.tail(4000))
			}
			if key != "IMD_TCP_ADDR" {
				return
			}
			// The HTTP listener had come up before the frame listener failed: it is gone too.
			if resp, err := http.Get("http://" + srv.HTTPAddr + "/readyz"); err == nil {
				resp.Body.Close()
				t.Fatalf("something still answers /readyz (%d) after the failed start", resp.StatusCode)
			}
		})
	}
}

// A frame listener whose accept fails (the `Accept() failed: invalid argument` of a socket no
// longer listening) takes the node out: imd exits non-zero for its supervisor to restart it,
// instead of answering /readyz while nobody takes frames.
func TestLostFrameListenerEndsTheProcess(t *testing.T) {
	srv := Start(t, Options{})
	ln := srv.listenerSocket()
	defer syscall.Close(ln)
	// shutdown(2) on the listening socket, reached through pidfd_getfd, makes imd's accept fail.
	if err := syscall.Shutdown(ln, syscall.SHUT_RD); err != nil {
		t.Fatal(err)
	}
	// The kernel wakes the listener only on a connection attempt.
	if nc, err := net.DialTimeout("tcp", srv.TCPAddr, time.Second); err == nil {
		nc.Close()
	}
	if code := srv.WaitExit(restartBound); code == 0 {
		t.Fatalf("imd exited 0 after losing its frame listener; log:\n%s", srv.logs.tail(4000))
	}
	if !strings.Contains(srv.Logs(), "tcp listener stopped accepting") {
		t.Fatalf("the loss is not logged:\n%s", srv.logs.tail(4000))
	}
}

// listenerSocket returns a descriptor of this test process for imd's listening frame socket,
// taken from the running process with pidfd_getfd(2) (Linux 5.6, needs ptrace rights: root).
func (s *Server) listenerSocket() int {
	s.t.Helper()
	pid := s.cmd.Process.Pid
	inode := listeningInode(s.t, fmt.Sprintf("/proc/%d/net/tcp", pid), s.TCPAddr)
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		s.t.Skipf("cannot read imd's descriptors: %v", err)
	}
	target := -1
	for _, e := range entries {
		if link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); link == "socket:["+inode+"]" {
			target, _ = strconv.Atoi(e.Name())
		}
	}
	if target < 0 {
		s.t.Fatalf("no descriptor of imd holds socket inode %s", inode)
	}
	const sysPidfdOpen, sysPidfdGetfd = 434, 438 // the same on every Linux architecture
	pidfd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		s.t.Skipf("pidfd_open: %v", errno)
	}
	defer syscall.Close(int(pidfd))
	fd, _, errno := syscall.Syscall(sysPidfdGetfd, pidfd, uintptr(target), 0)
	if errno != 0 {
		s.t.Skipf("pidfd_getfd: %v", errno)
	}
	return int(fd)
}

// listeningInode finds the socket inode listening on addr in a /proc/net/tcp table.
func listeningInode(t testing.TB, table, addr string) string {
	t.Helper()
	const listen = "0A"
	for _, fields := range procTCP(t, table, addr) {
		if fields[3] == listen && len(fields) > 9 {
			return fields[9]
		}
	}
	t.Fatalf("nothing listens on %s in %s", addr, table)
	return ""
}

// procTCP returns the rows of a /proc/net/tcp table whose local address is addr.
func procTCP(t testing.TB, table, addr string) [][]string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(host).To4()
	p, _ := strconv.Atoi(port)
	// /proc/net/tcp writes an IPv4 address as the hex of its bytes in host (little-endian) order.
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], p)
	f, err := os.Open(table)
	if err != nil {
		t.Skipf("no %s: %v", table, err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 3 && fields[1] == local {
			rows = append(rows, fields)
		}
	}
	return rows
}

// timeWaitOn counts the TIME_WAIT sockets whose local address is addr.
func timeWaitOn(t *testing.T, addr string) int {
	t.Helper()
	const timeWait = "06"
	n := 0
	for _, fields := range procTCP(t, "/proc/net/tcp", addr) {
		if fields[3] == timeWait {
			n++
		}
	}
	return n
}
