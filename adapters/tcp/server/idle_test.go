package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// Environment of the idle-connection measurement: it is a benchmark of memory, not a check,
// so it only runs when asked.
const (
	envIdleConns  = "IMD_IDLE_CONNS"       // how many connections to hold, e.g. 15000
	envIdleAddr   = "IMD_IDLE_CLIENT_ADDR" // set for the client process
	envIdleRootCA = "IMD_IDLE_CLIENT_CA"   // base64 DER of the certificate to trust; empty = plaintext
)

// TestIdleConnectionMemory holds IMD_IDLE_CONNS authenticated, idle connections in each
// listener mode and reports the server's resident memory per connection (DESIGN §10 W4). The
// clients live in a child process, so this process's RSS is the server's alone.
//
//	IMD_IDLE_CONNS=15000 go test -run TestIdleConnectionMemory -v ./adapters/tcp/server/
func TestIdleConnectionMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envIdleConns))
	if n <= 0 {
		t.Skipf("set %s to measure idle connections", envIdleConns)
	}
	for _, native := range []bool{false, true} {
		name := "tls off"
		if native {
			name = "tls native"
		}
		t.Run(name, func(t *testing.T) {
			cfg := Config{Multicore: true, IdleTimeout: time.Hour, Workers: 32, Queue: n}
			var caDER []byte
			if native {
				pki := newTestPKI(t)
				cfg.TLS = pki.server
				caDER = pki.server.Certificates[0].Certificate[0]
			}
			h := start(t, cfg, Deps{})
			before := settledMemory()

			child := exec.Command(os.Args[0], "-test.run=^TestIdleClientProcess$", "-test.timeout=30m")
			child.Env = append(os.Environ(), envIdleAddr+"="+h.srv.Addr().String(),
				envIdleRootCA+"="+base64.StdEncoding.EncodeToString(caDER), envIdleConns+"="+strconv.Itoa(n))
			stdin, err := child.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			child.Stderr = os.Stderr
			started := time.Now()
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = stdin.Close(); _ = child.Wait() }()
			if !waitForLine(stdout, "ready") {
				t.Fatal("client process did not get its connections up")
			}
			connectTime := time.Since(started)
			if got := int(h.metrics.gauge("tcp_connections")); got != n {
				t.Fatalf("%d connections open, want %d", got, n)
			}
			after := settledMemory()
			perConn := func(a, b uint64) float64 { return float64(int64(a)-int64(b)) / float64(n) }
			t.Logf("%s: %d idle authenticated connections (up in %v): RSS %d → %d MiB, %.0f B/conn RSS, %.0f B/conn Go heap+stacks; %.0f connections per GiB",
				name, n, connectTime.Round(time.Millisecond), before.rss>>20, after.rss>>20,
				perConn(after.rss, before.rss), perConn(after.goMem, before.goMem), float64(1<<30)/perConn(after.rss, before.rss))
		})
	}
}

// TestIdleClientProcess is the client side of TestIdleConnectionMemory, run in a child
// process: it connects, authenticates, prints "ready" and holds until stdin closes.
func TestIdleClientProcess(t *testing.T) {
	addr := os.Getenv(envIdleAddr)
	if addr == "" {
		t.Skip("runs only as TestIdleConnectionMemory's client process")
	}
	n, _ := strconv.Atoi(os.Getenv(envIdleConns))
	var cfg *tls.Config
	if ca := os.Getenv(envIdleRootCA); ca != "" {
		der, err := base64.StdEncoding.DecodeString(ca)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AddCert(cert)
		cfg = &tls.Config{ServerName: "im.test", RootCAs: roots}
	}
	conns := make([]net.Conn, n)
	next := make(chan int)
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		failure error
	)
	for range 64 {
		wg.Go(func() {
			for i := range next {
				nc, err := idleConnect(addr, cfg, i)
				if err != nil {
					errOnce.Do(func() { failure = fmt.Errorf("connection %d: %w", i, err) })
					continue
				}
				conns[i] = nc
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	for _, nc := range conns {
		_ = nc.Close()
	}
}

// idleConnect dials, authenticates as user i+1 and leaves the connection idle.
func idleConnect(addr string, cfg *tls.Config, i int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, err
		}
		nc = tc
	}
	body := fmt.Appendf(nil, `{"token":%q,"device_id":1}`, token(int64(i+1)))
	f, err := frame.Append(nil, wire.CmdAuth, 1, 1, body, 0)
	if err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
	if _, err := nc.Write(f); err != nil {
		_ = nc.Close()
		return nil, err
	}
	r := bufio.NewReaderSize(nc, 512)
	head := make([]byte, frame.HeaderLen)
	if _, err := io.ReadFull(r, head); err != nil {
		_ = nc.Close()
		return nil, err
	}
	h, err := frame.ParseHeader(head)
	if err == nil && h.Command != wire.CmdAuth {
		err = fmt.Errorf("answer command %d", h.Command)
	}
	if err == nil {
		_, err = r.Discard(int(h.BodyLen))
	}
	_ = nc.SetDeadline(time.Time{})
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	return nc, nil
}

type memUse struct {
	rss   uint64 // resident set size of this process
	goMem uint64 // Go heap in use plus goroutine stacks
}

// settledMemory collects garbage, returns freed pages to the OS and reads the process's memory.
func settledMemory() memUse {
	time.Sleep(500 * time.Millisecond) // let event loops and the ticker settle
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := memUse{goMem: ms.HeapInuse + ms.StackInuse}
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return m
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			m.rss = kb << 10
		}
	}
	return m
}

func waitForLine(r io.Reader, want string) bool {
	s := bufio.NewScanner(r)
	for s.Scan() {
		if strings.TrimSpace(s.Text()) == want {
			return true
		}
	}
	return false
}
