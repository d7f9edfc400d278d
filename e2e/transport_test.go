package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/tlstest"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// transportServerName is the SNI the transport tests' certificate is for.
const transportServerName = "im.e2e.test"

// withDefaultRateLimits sets the rate limits of adapters/config's defaults (seed 003 §19 per
// device, ten devices' worth per address), which the harness turns off for other tests.
func withDefaultRateLimits(env map[string]string) map[string]string {
	if env == nil {
		env = map[string]string{}
	}
	for k, v := range map[string]string{
		"IMD_RATE_LIMIT_MESSAGE_PER_SECOND":              "20",
		"IMD_RATE_LIMIT_AUTH_PER_SECOND":                 "5",
		"IMD_RATE_LIMIT_SYNC_INBOX_PER_MINUTE":           "60",
		"IMD_RATE_LIMIT_SYNC_MESSAGES_PER_MINUTE":        "120",
		"IMD_RATE_LIMIT_HISTORY_PER_MINUTE":              "200",
		"IMD_RATE_LIMIT_PER_IP_MESSAGE_PER_SECOND":       "200",
		"IMD_RATE_LIMIT_PER_IP_AUTH_PER_SECOND":          "50",
		"IMD_RATE_LIMIT_PER_IP_SYNC_INBOX_PER_MINUTE":    "600",
		"IMD_RATE_LIMIT_PER_IP_SYNC_MESSAGES_PER_MINUTE": "1200",
		"IMD_RATE_LIMIT_PER_IP_HISTORY_PER_MINUTE":       "2000",
	} {
		env[k] = v
	}
	return env
}

// transportTLS writes a self-signed certificate for transportServerName into a temporary
// directory and returns the env that starts imd in tls: native mode with it, and the client
// configuration that trusts it.
func transportTLS(t *testing.T) (env map[string]string, clientTLS *tls.Config) {
	t.Helper()
	server, roots := tlstest.SelfSigned(t, transportServerName)
	certFile, keyFile := tlstest.WriteFiles(t, server)
	env = map[string]string{"IMD_TCP_TLS": "native", "IMD_TCP_CERT_FILE": certFile, "IMD_TCP_KEY_FILE": keyFile}
	return env, &tls.Config{ServerName: transportServerName, RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// transportTLSMode is transportTLS in tls mode "native" and plaintext (no env, no client
// TLS) in mode "off".
func transportTLSMode(t *testing.T, mode string) (env map[string]string, clientTLS *tls.Config) {
	t.Helper()
	if mode != "native" {
		return nil, nil
	}
	return transportTLS(t)
}

// transportLogContains reports whether imd's output so far contains s.
func transportLogContains(s *Server, sub string) bool {
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	return strings.Contains(s.logs.buf.String(), sub)
}

// transportMetric reads an unlabelled metric from /metrics.
func transportMetric(t *testing.T, s *Server, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("metric %s not exposed", name)
	return 0
}

// transportDial connects with o (Addr and RequestTimeout filled in) and closes at cleanup.
func transportDial(t *testing.T, ctx context.Context, s *Server, o client.Options) (*client.Conn, error) {
	t.Helper()
	o.Addr, o.RequestTimeout = s.TCPAddr, 15*time.Second
	c, err := client.Dial(ctx, o)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, nil
}

// transportNextPush waits for a push on c.
func transportNextPush(t *testing.T, c *client.Conn, within time.Duration) (client.Push, bool) {
	t.Helper()
	select {
	case p, ok := <-c.Pushes():
		return p, ok
	case <-time.After(within):
		return client.Push{}, false
	}
}

// transportExpectKick waits for KICK {reason} on c, then for the server to close c.
func transportExpectKick(t *testing.T, c *client.Conn, reason string) {
	t.Helper()
	for {
		p, ok := transportNextPush(t, c, 10*time.Second)
		if !ok {
			t.Fatalf("connection closed or silent without KICK %q (err %v)", reason, c.Err())
		}
		if p.Command != wire.CmdKick {
			continue
		}
		var k wire.Kick
		if err := json.Unmarshal(p.Envelope.Data, &k); err != nil || k.Reason != reason {
			t.Fatalf("KICK %s, want reason %q", p.Envelope.Data, reason)
		}
		break
	}
	select {
	case <-c.Closed():
		if !errors.Is(c.Err(), io.EOF) {
			t.Fatalf("connection ended with %v, want the server's close", c.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("connection still open after its KICK")
	}
}

// TestTransportThousandTLSConnections: 1,000 concurrent native-TLS connections, each behind a
// PROXY v2 header from its own client address as Nginx would send it, authenticate and get
// a HEARTBEAT answer (10 devices each of 100 users), under the default rate limits.
func TestTransportThousandTLSConnections(t *testing.T) {
	env, clientTLS := transportTLS(t)
	env["IMD_TCP_PROXY_PROTOCOL"] = "true"
	// Nginx sends the PROXY header with its connect; here 1,000 client goroutines doing TLS on
	// two shared cores may not get to write theirs within the 3 s default (CI, load 19).
	env["IMD_TCP_PROXY_TIMEOUT"] = "60s"
	srv := Start(t, Options{Env: withDefaultRateLimits(env)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const users, devices = 100, 10
	tokens := make([]string, users)
	for i := range tokens {
		tokens[i] = srv.User(int64(5000 + i))
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed []error
		conns  = make([]*client.Conn, users*devices)
	)
	started := time.Now()
	for i := range conns {
		wg.Go(func() {
			user, device := i/devices, uint64(i%devices+1)
			// 10.0.x.y: a distinct client address per connection, so no address shares a budget.
			src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), uint16(20000+i))
			err := func() error {
				// A minute for connect, header and handshake: 1,000 handshakes share two cores
				// with the server (CI at load 13: i/o timeouts at the 10 s default).
				c, err := transportDial(t, ctx, srv, client.Options{TLS: clientTLS, ProxyHeader: 2, ProxySource: src, DialTimeout: time.Minute})
				if err != nil {
					return err
				}
				conns[i] = c
				if _, err := c.Auth(ctx, tokens[user], device); err != nil {
					return fmt.Errorf("auth: %w", err)
				}
				return c.Heartbeat(ctx)
			}()
			if err != nil {
				mu.Lock()
				failed = append(failed, fmt.Errorf("connection %d: %w", i, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d connections failed, first: %v", len(failed), len(conns), failed[0])
	}
	t.Logf("%d TLS connections authenticated and answered in %v", len(conns), time.Since(started).Round(time.Millisecond))
	if n := transportMetric(t, srv, "tcp_connections"); n != float64(len(conns)) {
		t.Fatalf("tcp_connections %v, want %d", n, len(conns))
	}
	if n := transportMetric(t, srv, "tcp_tls_handshake_failures_total"); n != 0 {
		t.Fatalf("tcp_tls_handshake_failures_total %v", n)
	}
	// Every connection is still usable afterwards.
	for i, c := range conns {
		if err := c.Heartbeat(ctx); err != nil {
			t.Fatalf("connection %d after the burst: %v", i, err)
		}
	}
}

// TestTransportSecondAuthKicksFirst: a second AUTH of the same (user, device) gets the first
// connection KICKed with reason "replaced"; the user's other devices stay.
func TestTransportSecondAuthKicksFirst(t *testing.T) {
	for _, mode := range []string{"off", "native"} {
		t.Run("tls "+mode, func(t *testing.T) {
			env, clientTLS := transportTLSMode(t, mode)
			srv := Start(t, Options{Env: env})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tok := srv.User(7001)
			connect := func(device uint64) *client.Conn {
				c, err := transportDial(t, ctx, srv, client.Options{TLS: clientTLS})
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				if _, err := c.Auth(ctx, tok, device); err != nil {
					t.Fatalf("auth: %v", err)
				}
				return c
			}
			first, otherDevice := connect(1), connect(2)
			second := connect(1)
			transportExpectKick(t, first, wire.KickReasonReplaced)
			for name, c := range map[string]*client.Conn{"replacement": second, "other device": otherDevice} {
				if err := c.Heartbeat(ctx); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		})
	}
}

// TestTransportSendRateLimit: 30 sends from one device at once against the default budget of
// 20 per second: no more than 20 are acknowledged, the rest get 42901 on SEND_ACK and leave
// nothing behind; a second later the budget is back.
func TestTransportSendRateLimit(t *testing.T) {
	srv := Start(t, Options{Env: withDefaultRateLimits(nil)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokA := srv.User(7101)
	srv.User(7102)
	topic := srv.Group(71, 7101, 7102)
	c := srv.Connect(ctx, tokA, 1)

	// All 30 frames in one write, so they reach the server within the same instant.
	const sends, budget = 30, 20
	var burst []byte
	for i := range sends {
		body, err := json.Marshal(textMessage(topic, "rl-"+strconv.Itoa(i), "burst "+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if burst, err = frame.Append(burst, wire.CmdSendMessage, uint64(900000+i), uint32(900000+i), body, 0); err != nil {
			t.Fatal(err)
		}
	}
	started := time.Now()
	if err := c.WriteRaw(burst); err != nil {
		t.Fatal(err)
	}
	codes := map[int]int{}
	for range sends {
		// Answers to frames written raw match no request of the client: they come as pushes.
		p, ok := transportNextPush(t, c, 15*time.Second)
		if !ok {
			t.Fatalf("answers so far %v; connection: %v", codes, c.Err())
		}
		if p.Command != wire.CmdSendAck {
			t.Fatalf("answer on command %d, want SEND_ACK", p.Command)
		}
		codes[p.Envelope.Code]++
	}
	elapsed := time.Since(started)
	acked, limited := codes[wire.CodeOK], codes[wire.CodeRateLimited]
	t.Logf("30 sends at once: %d acknowledged, %d rate limited, in %v", acked, limited, elapsed.Round(time.Millisecond))
	if acked+limited != sends || acked == 0 || acked > budget || limited < sends-budget {
		t.Fatalf("answers %v: want at most %d acknowledged and the rest 42901", codes, budget)
	}
	history, err := c.History(ctx, topic, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != acked {
		t.Fatalf("topic holds %d messages, want only the %d acknowledged", len(history), acked)
	}

	time.Sleep(time.Second + 100*time.Millisecond) // the rate-limit window is a second: its passing is what is tested
	if _, err := c.Send(ctx, textMessage(topic, "rl-after", "after a second")); err != nil {
		t.Fatalf("send a second later: %v", err)
	}
}

// TestTransportShutdownKicks: SIGTERM tells every connected client to reconnect with KICK
// {"reason":"shutdown"} before imd closes it and exits.
func TestTransportShutdownKicks(t *testing.T) {
	for _, mode := range []string{"off", "native"} {
		t.Run("tls "+mode, func(t *testing.T) {
			env, clientTLS := transportTLSMode(t, mode)
			srv := Start(t, Options{Env: env})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tok := srv.User(7201)
			authed, err := transportDial(t, ctx, srv, client.Options{TLS: clientTLS})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := authed.Auth(ctx, tok, 1); err != nil {
				t.Fatal(err)
			}
			anonymous, err := transportDial(t, ctx, srv, client.Options{TLS: clientTLS})
			if err != nil {
				t.Fatal(err)
			}
			if err := anonymous.Heartbeat(ctx); err != nil {
				t.Fatal(err)
			}

			if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			transportExpectKick(t, authed, "shutdown")
			transportExpectKick(t, anonymous, "shutdown")
			select {
			case <-srv.exited:
				if st := srv.cmd.ProcessState; !st.Success() {
					t.Fatalf("imd exited with %v", st)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("imd still running 20s after SIGTERM")
			}
		})
	}
}

// TestTransportProxyRequired: with proxy_protocol on, a connection without PROXY header is
// closed, and the address a PROXY v2 header names is the real_ip imd logs.
func TestTransportProxyRequired(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_TCP_PROXY_PROTOCOL": "true", "IMD_LOG_LEVEL": "debug"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("no header is closed", func(t *testing.T) {
		nc, err := net.DialTimeout("tcp", srv.TCPAddr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		hb, err := frame.Append(nil, wire.CmdHeartbeat, 1, 1, []byte(`{}`), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(hb); err != nil {
			t.Fatal(err)
		}
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := nc.Read(make([]byte, 64))
		if n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read %d bytes, err %v: want the connection closed without an answer", n, err)
		}
	})
	t.Run("real IP from a PROXY v2 header", func(t *testing.T) {
		tok := srv.User(7301)
		c, err := transportDial(t, ctx, srv, client.Options{ProxyHeader: 2, ProxySource: netip.MustParseAddrPort("127.0.0.9:5555")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Auth(ctx, tok, 1); err != nil {
			t.Fatal(err)
		}
		if err := c.Heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !transportLogContains(srv, `"real_ip":"127.0.0.9"`) {
			if time.Now().After(deadline) {
				t.Fatal(`imd's log has no "real_ip":"127.0.0.9"`)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestTransportIdleTimeout: a connection silent for tcp.idle_timeout is closed; one that
// heartbeats stays.
func TestTransportIdleTimeout(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_TCP_IDLE_TIMEOUT": "1s"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	silent, busy := srv.Dial(ctx), srv.Dial(ctx)
	for range 6 {
		time.Sleep(400 * time.Millisecond)
		if err := busy.Heartbeat(ctx); err != nil {
			t.Fatalf("heartbeating connection closed: %v", err)
		}
	}
	select {
	case <-silent.Closed():
	case <-time.After(5 * time.Second):
		t.Fatal("silent connection still open after twice the idle timeout")
	}
}
