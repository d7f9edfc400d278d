package server

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/tlstest"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/proxyheader"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/delivery"
)

// testPKI is a self-signed certificate for im.test and the client configuration that
// trusts it.
type testPKI struct {
	server *tls.Config
	client *tls.Config
}

func newTestPKI(t testing.TB) testPKI {
	t.Helper()
	server, roots := tlstest.SelfSigned(t, "im.test")
	return testPKI{server: server, client: &tls.Config{ServerName: "im.test", RootCAs: roots}}
}

// connect dials with the Go client and authenticates as user/device.
func (h *harness) connect(t *testing.T, o client.Options, user int64, device uint64) *client.Conn {
	t.Helper()
	o.Addr = h.srv.Addr().String()
	c, err := client.Dial(t.Context(), o)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Auth(t.Context(), token(user), device); err != nil {
		t.Fatalf("auth: %v", err)
	}
	return c
}

func nextPush(t *testing.T, c *client.Conn) client.Push {
	t.Helper()
	select {
	case p, ok := <-c.Pushes():
		if !ok {
			t.Fatalf("connection closed: %v", c.Err())
		}
		return p
	case <-time.After(3 * time.Second):
		t.Fatal("no push within 3s")
	}
	return client.Push{}
}

// Native TLS serves the same commands, responses and pushes as plaintext, with and without
// a PROXY header in front of the handshake.
func TestNativeTLS(t *testing.T) {
	pki := newTestPKI(t)
	source := netip.MustParseAddrPort("198.51.100.23:40000")
	tests := []struct {
		name   string
		proxy  int
		wantIP string
	}{
		{"no PROXY header", 0, "127.0.0.1"},
		{"PROXY v1", 1, "198.51.100.23"},
		{"PROXY v2", 2, "198.51.100.23"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStack(t)
			h := start(t, Config{TLS: pki.server, ProxyProtocol: tt.proxy != 0, CompressMin: 64, PushAckTimeout: 200 * time.Millisecond}, st.deps)
			opts := client.Options{TLS: pki.client, ProxyHeader: tt.proxy, ProxySource: source}
			alice := h.connect(t, opts, 1, 7)
			bob := h.connect(t, opts, 2, 1)

			if err := alice.Heartbeat(t.Context()); err != nil {
				t.Fatalf("heartbeat: %v", err)
			}
			long := strings.Repeat("compressed over TLS ", 50)
			ack, err := alice.Send(t.Context(), wire.SendMessageRequest{ToUser: 2, ClientMsgID: "m1", Type: "text", Content: text(long)})
			if err != nil || ack.Seq != 1 {
				t.Fatalf("send: %+v %v", ack, err)
			}
			// The deliver worker is not running here; push what it would.
			job, ok, err := st.queue.Take(t.Context(), "default", 0, time.Second)
			if err != nil || !ok {
				t.Fatalf("deliver job: %v %v", ok, err)
			}
			target := delivery.Target{Recipients: []int64{1, 2}, Sender: 1, ExcludeDevice: 7}
			if rep := h.srv.Push(t.Context(), "default", target, delivery.Push{Kind: delivery.KindMessage, Message: job.Message}); rep.Delivered != 1 {
				t.Fatalf("push report %+v", rep)
			}
			p := nextPush(t, bob)
			if p.Command != wire.CmdMessage || p.Message == nil || p.Message.Seq != 1 || !strings.Contains(string(p.Message.Content), long) {
				t.Fatalf("push %+v", p)
			}
			msgs, err := bob.History(t.Context(), p2pTopic, 0, 10)
			if err != nil || len(msgs) != 1 || msgs[0].MsgID != ack.MsgID {
				t.Fatalf("history %+v %v", msgs, err)
			}
			// The client writes its PUSH_ACK before its next read from the socket, so the ack went
			// out before the history answer came in, ahead of this heartbeat, which the server
			// answers only once it has handled the ack. A sweep past the push's timeout then proves the
			// acknowledged push is never counted, with no wait on the sweep's own ticker.
			if err := bob.Heartbeat(t.Context()); err != nil {
				t.Fatalf("heartbeat after the ack: %v", err)
			}
			h.srv.Dispatcher().Sessions().ExpireAcks(time.Now().Add(time.Hour))
			if n := h.metrics.count("push_ack_timeout_total"); n != 0 {
				t.Fatalf("push_ack_timeout_total %v for an acknowledged push", n)
			}
			if rec := h.logs.find("connection accepted", "real_ip", tt.wantIP); rec == nil {
				t.Fatalf("no accepted connection with real_ip %s", tt.wantIP)
			}
		})
	}
}

// The same push reaches TLS connections and plaintext connections as the same frame: the
// body is encoded once, each TLS connection encrypts its own copy.
func TestPushIdenticalInBothModes(t *testing.T) {
	pki := newTestPKI(t)
	push := delivery.Push{Kind: delivery.KindMessage, Message: testMessage(5, strings.Repeat("x", 700))}
	var bodies []string
	for _, mode := range []struct {
		name string
		cfg  Config
		opts client.Options
	}{
		{"off", Config{}, client.Options{}},
		{"native", Config{TLS: pki.server}, client.Options{TLS: pki.client}},
	} {
		h := start(t, mode.cfg, Deps{})
		a, b := h.connect(t, mode.opts, 1, 1), h.connect(t, mode.opts, 2, 1)
		if rep := h.srv.Push(t.Context(), "default", delivery.Target{Recipients: []int64{1, 2}}, push); rep.Delivered != 2 {
			t.Fatalf("%s: report %+v", mode.name, rep)
		}
		for _, c := range []*client.Conn{a, b} {
			p := nextPush(t, c)
			raw, _ := json.Marshal(p.Envelope)
			bodies = append(bodies, string(raw))
		}
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Fatalf("push differs between connections or modes:\n%s\n%s", bodies[0], b)
		}
	}
}

// slowWriter delivers every write in small pieces with pauses, so TLS records and frames
// reach the server split across many reads.
type slowWriter struct {
	net.Conn
	piece int
}

func (w slowWriter) Write(b []byte) (int, error) {
	for i := 0; i < len(b); i += w.piece {
		if _, err := w.Conn.Write(b[i:min(i+w.piece, len(b))]); err != nil {
			return i, err
		}
		time.Sleep(100 * time.Microsecond)
	}
	return len(b), nil
}

func TestTLSFramesSplitAcrossRecordsAndReads(t *testing.T) {
	pki := newTestPKI(t)
	h := start(t, Config{TLS: pki.server}, Deps{})
	a := h.srv.Addr()
	nc, err := net.Dial(a.Network(), a.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	tc := tls.Client(slowWriter{nc, 700}, pki.client)

	// A 60 KB frame spans four TLS records; with it, two small ones in the same write.
	padding, _ := json.Marshal(map[string]string{"pad": strings.Repeat("p", 60<<10)})
	var stream []byte
	for seq, body := range [][]byte{[]byte(`{}`), padding, []byte(`{}`)} {
		if stream, err = frame.Append(stream, wire.CmdHeartbeat, uint64(seq+1), uint32(seq+1), body, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tc.Write(stream); err != nil {
		t.Fatalf("write: %v", err)
	}
	c := &rawClient{t: t, nc: tc}
	for seq := uint32(1); seq <= 3; seq++ {
		if f := c.read(); f.SequenceID != seq || f.Command != wire.CmdHeartbeat {
			t.Fatalf("answer %d: %+v", seq, f.Header)
		}
	}
}

func TestTLSRefusals(t *testing.T) {
	pki := newTestPKI(t)
	heartbeat, err := frame.Append(nil, wire.CmdHeartbeat, 1, 1, []byte(`{}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		cfg   Config
		bytes []byte
		// wantMetric counts once the connection is closed
		wantMetric string
	}{
		{"plaintext frames to a TLS listener", Config{}, heartbeat, "tcp_tls_handshake_failures_total"},
		{"partial ClientHello, then silence", Config{}, []byte{0x16, 0x03, 0x01, 0x01, 0x00, 0x01, 0x00}, "tcp_tls_handshake_failures_total"},
		{"nothing at all", Config{}, nil, "tcp_tls_handshake_failures_total"},
		{"TLS without the required PROXY header", Config{ProxyProtocol: true, ProxyTimeout: 200 * time.Millisecond},
			[]byte{0x16, 0x03, 0x01, 0x01, 0x00, 0x01, 0x00}, "realip_missing_total"},
		{"PROXY header, then a stalled handshake", Config{ProxyProtocol: true},
			proxyheader.AppendV2(nil, netip.MustParseAddrPort("203.0.113.1:1000"), netip.MustParseAddrPort("127.0.0.1:9000")),
			"tcp_tls_handshake_failures_total"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.TLS, cfg.HandshakeTimeout = pki.server, 300*time.Millisecond
			h := start(t, cfg, Deps{})
			c := h.dial(t)
			started := time.Now()
			if tt.bytes != nil {
				c.write(tt.bytes)
			}
			c.expectClosed()
			if d := time.Since(started); d > 2*time.Second {
				t.Fatalf("closed after %v", d)
			}
			eventually(t, tt.wantMetric, func() bool { return h.metrics.count(tt.wantMetric) == 1 })
		})
	}
}

// A handshake that is merely slow, not stalled, completes.
func TestTLSSlowHandshakeWithinTimeout(t *testing.T) {
	pki := newTestPKI(t)
	h := start(t, Config{TLS: pki.server, HandshakeTimeout: 5 * time.Second}, Deps{})
	a := h.srv.Addr()
	nc, err := net.Dial(a.Network(), a.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	tc := tls.Client(slowWriter{nc, 16}, pki.client)
	if err := tc.HandshakeContext(t.Context()); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	c := &rawClient{t: t, nc: tc}
	if _, env := c.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
		t.Fatalf("heartbeat code %d", env.Code)
	}
}

func TestTLSSecondAuthKicksFirst(t *testing.T) {
	pki := newTestPKI(t)
	h := start(t, Config{TLS: pki.server}, Deps{})
	opts := client.Options{TLS: pki.client}
	first := h.connect(t, opts, 4, 77)
	second := h.connect(t, opts, 4, 77)
	p := nextPush(t, first)
	var k wire.Kick
	if p.Command != wire.CmdKick || json.Unmarshal(p.Envelope.Data, &k) != nil || k.Reason != wire.KickReasonReplaced {
		t.Fatalf("first connection got %+v, want KICK replaced", p)
	}
	select {
	case <-first.Closed():
		if !errors.Is(first.Err(), io.EOF) {
			t.Fatalf("first connection ended with %v, want the server's close", first.Err())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("kicked connection still open")
	}
	if err := second.Heartbeat(t.Context()); err != nil {
		t.Fatalf("second connection: %v", err)
	}
}

func TestTLSClientCloseNotify(t *testing.T) {
	pki := newTestPKI(t)
	h := start(t, Config{TLS: pki.server}, Deps{})
	a := h.srv.Addr()
	nc, err := net.Dial(a.Network(), a.String())
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(nc, pki.client)
	c := &rawClient{t: t, nc: tc}
	if _, env := c.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
		t.Fatalf("heartbeat code %d", env.Code)
	}
	if err := tc.CloseWrite(); err != nil { // sends close_notify
		t.Fatal(err)
	}
	eventually(t, "the server closes its side", func() bool { return h.metrics.gauge("tcp_connections") == 0 })
	_ = nc.Close()
	if h.metrics.count("tcp_tls_handshake_failures_total") != 0 {
		t.Fatal("a clean close counted as a handshake failure")
	}
}
