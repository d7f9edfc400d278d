package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// HAProxy is Debian's HAProxy in TCP mode in front of imd nodes, as an operator runs a rolling
// restart behind an L4 balancer: `option httpchk GET /readyz` against each node's HTTP port,
// and no retries or redispatch, so a connect to a node that went away fails to the client.
// It logs every connection as it is set up ("accept time, server, termination state") to
// count the reconnects each node takes.
type HAProxy struct {
	TCPAddr  string // the frame listeners behind one address
	HTTPAddr string // the HTTP listeners (GET /ws) behind one address
	logs     *lockedBuffer
}

// haproxyCheckInterval is the health check's pace; two failed checks take a node out, one
// good check brings it back. A node's shutdown.unready_grace must outlast two intervals.
const haproxyCheckInterval = 200 * time.Millisecond

// StartHAProxy balances over nodes, installing HAProxy through deploy/local/haproxy.sh when
// IMD_REQUIRE_SERVICES=1 (as root), skipping the test when it is missing otherwise.
func StartHAProxy(t *testing.T, nodes []*Server) *HAProxy {
	t.Helper()
	verb := "path"
	if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
		verb = "up"
	}
	out, err := exec.Command("bash", filepath.Join(repoRoot(), "deploy", "local", "haproxy.sh"), verb).Output()
	if err != nil {
		if verb == "up" {
			t.Fatalf("deploy/local/haproxy.sh up: %v", err)
		}
		t.Skip("haproxy not installed: deploy/local/haproxy.sh up (as root) installs it")
	}
	h := &HAProxy{TCPAddr: freeAddr(t), HTTPAddr: freeAddr(t), logs: &lockedBuffer{}}
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(h.config(nodes)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(strings.TrimSpace(string(out)), "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = h.logs, h.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start haproxy: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("haproxy log tail:\n%s", h.logs.tail(4000))
		}
	})
	eventually(t, 10*time.Second, "haproxy listening", func() bool {
		c, err := net.DialTimeout("tcp", h.TCPAddr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return h
}

func (h *HAProxy) config(nodes []*Server) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn 4096
    log stdout format raw local0
defaults
    mode tcp
    log global
    option logasap
    log-format "%%Ts.%%ms %%s %%ts"
    retries 0
    timeout connect 2s
    timeout client 5m
    timeout server 5m
    default-server inter %dms fall 2 rise 1
frontend frames
    bind %s
    default_backend frames
frontend http
    bind %s
    default_backend http
`, haproxyCheckInterval.Milliseconds(), h.TCPAddr, h.HTTPAddr)
	for _, backend := range []string{"frames", "http"} {
		fmt.Fprintf(&b, "backend %s\n    balance roundrobin\n    option httpchk GET /readyz\n", backend)
		for i, n := range nodes {
			addr := n.TCPAddr
			if backend == "http" {
				addr = n.HTTPAddr
			}
			_, port, _ := net.SplitHostPort(n.HTTPAddr)
			fmt.Fprintf(&b, "    server n%d %s check port %s\n", i+1, addr, port)
		}
	}
	return b.String()
}

// connect is one connection HAProxy set up (or failed to): when it was accepted, the node
// it went to ("n1"…, "<NOSRV>" when none was up) and whether the connect to it failed.
type connect struct {
	at     time.Time
	server string
	failed bool
}

// Connects parses the connection log so far.
func (h *HAProxy) Connects() []connect {
	var out []connect
	for _, line := range strings.Split(h.logs.tail(1<<30), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		secs, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		// %ts: the first letter is why the session ended, "C" a connect that failed, the
		// second where: "C" before the server answered. "--" is a session still up.
		out = append(out, connect{
			at:     time.UnixMilli(int64(secs * 1000)),
			server: f[1],
			failed: len(f[2]) == 2 && f[2][1] == 'C',
		})
	}
	return out
}

// peakRate is the most connects to other servers than skip in any 100 ms and any 1 s window
// (sliding) between from and to.
func peakRate(connects []connect, skip string, from, to time.Time) (per100ms, perSecond int) {
	var at []time.Time
	for _, c := range connects {
		if c.server != skip && !c.failed && !c.at.Before(from) && !c.at.After(to) {
			at = append(at, c.at)
		}
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	most := func(window time.Duration) int {
		best, lo := 0, 0
		for hi := range at {
			for at[hi].Sub(at[lo]) >= window {
				lo++
			}
			best = max(best, hi-lo+1)
		}
		return best
	}
	return most(100 * time.Millisecond), most(time.Second)
}
