package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/proxyhdr"
	"github.com/imdhq/imd/adapters/protocol/tlstest"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// The client side of these tests binds 127.0.0.2 (and 127.0.0.3): any 127/8 address is
// loopback on Linux, and it differs from the 127.0.0.1 every Nginx hop uses, so a
// real_ip of 127.0.0.2 in imd's log can only come from the PROXY header chain.
const (
	clientIP = "127.0.0.2"
	peerIP   = "127.0.0.3"
)

var proxiedEnv = map[string]string{
	"IMD_TCP_PROXY_PROTOCOL": "true",
	"IMD_LOG_LEVEL":          "debug", // connection and request records carry real_ip
}

// TestNginxModeOff: Nginx terminates the im TLS on an internal stream hop and sends PROXY +
// plaintext frames to imd (tcp.tls: off, proxy_protocol: true) — the deploy/compose.yaml
// setup.
func TestNginxModeOff(t *testing.T) {
	RequireNginx(t)
	srv := Start(t, Options{Env: proxiedEnv})
	ngx := StartNginx(t, NginxOptions{Mode: "off", IMDTCP: srv.TCPAddr, IMDHTTP: srv.HTTPAddr})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fx := newNginxFixture(srv)

	t.Run("IM through Nginx keeps the client's address across both hops", func(t *testing.T) {
		checkIMThroughNginx(t, ctx, srv, ngx, fx)
	})
	t.Run("unknown SNI, no SNI and plaintext are refused before imd", func(t *testing.T) {
		checkRefused(t, ctx, srv, ngx)
	})
	t.Run("api SNI reaches the HTTP API with the client's address", func(t *testing.T) {
		checkAPIThroughNginx(t, srv, ngx)
	})
	t.Run("a direct connection without PROXY header is closed", func(t *testing.T) {
		checkDirectWithoutProxy(t, ctx, srv, nil)
	})
	t.Run("a direct connection with a PROXY header is served", func(t *testing.T) {
		checkDirectWithProxy(t, ctx, srv, fx, nil)
	})
}

// TestNginxModeNative: Nginx passes the client's TLS through untouched after a PROXY header;
// imd terminates TLS itself (tcp.tls: native, proxy_protocol: true).
func TestNginxModeNative(t *testing.T) {
	RequireNginx(t)
	srv, certs, state, domain := startNativeIMD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	imTLS := imTLSConfig(domain, loadRoots(t, filepath.Join(certs, "ca.crt")))
	probe, err := client.Dial(ctx, client.Options{Addr: srv.TCPAddr, ProxyHeader: 1, TLS: imTLS})
	if err != nil {
		t.Fatalf("direct PROXY + TLS to imd in tls: native: %v", err)
	}
	probe.Close()

	ngx := StartNginx(t, NginxOptions{Mode: "native", Domain: domain, StateDir: state, IMDTCP: srv.TCPAddr, IMDHTTP: srv.HTTPAddr})
	fx := newNginxFixture(srv)

	t.Run("IM through Nginx (TLS passthrough) keeps the client's address", func(t *testing.T) {
		checkIMThroughNginx(t, ctx, srv, ngx, fx)
	})
	t.Run("unknown SNI, no SNI and plaintext are refused before imd", func(t *testing.T) {
		checkRefused(t, ctx, srv, ngx)
	})
	t.Run("api SNI reaches the HTTP API with the client's address", func(t *testing.T) {
		checkAPIThroughNginx(t, srv, ngx)
	})
	t.Run("a direct connection without PROXY header is closed", func(t *testing.T) {
		checkDirectWithoutProxy(t, ctx, srv, imTLS)
	})
	t.Run("a direct connection with a PROXY header is served", func(t *testing.T) {
		checkDirectWithProxy(t, ctx, srv, fx, imTLS)
	})
}

// nginxFixture holds what the parent test creates through the admin API: the harness's
// helpers fail the test they were started with, so subtests must not call them.
type nginxFixture struct {
	sender, receiver int64
	senderToken      string
	receiverToken    string
	topic            string
}

func newNginxFixture(srv *Server) nginxFixture {
	fx := nginxFixture{sender: 2001, receiver: 2002}
	fx.senderToken, fx.receiverToken = srv.User(fx.sender), srv.User(fx.receiver)
	fx.topic = srv.Group(88, fx.sender, fx.receiver)
	return fx
}

func checkIMThroughNginx(t *testing.T, ctx context.Context, srv *Server, ngx *Nginx, fx nginxFixture) {
	recv, err := ngx.DialIM(ctx, peerIP)
	if err != nil {
		t.Fatalf("dial %s with SNI %s: %v", ngx.Addr, ngx.IMName(), err)
	}
	if _, err := recv.Auth(ctx, fx.receiverToken, 1); err != nil {
		t.Fatalf("receiver auth: %v", err)
	}
	send, err := ngx.DialIM(ctx, clientIP)
	if err != nil {
		t.Fatalf("dial %s with SNI %s: %v", ngx.Addr, ngx.IMName(), err)
	}
	if _, err := send.Auth(ctx, fx.senderToken, 1); err != nil {
		t.Fatalf("sender auth: %v", err)
	}
	clientMsgID := "via-nginx-" + randomHex(4)
	ack, err := send.Send(ctx, textMessage(fx.topic, clientMsgID, "hello through nginx"))
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if ack.Seq < 1 || ack.MsgID == 0 || ack.ClientMsgID != clientMsgID {
		t.Fatalf("bad ack %+v", ack)
	}
	got := waitMessage(t, recv, ack.Seq, 15*time.Second)
	if got.From != fx.sender || got.MsgID != ack.MsgID {
		t.Fatalf("receiver got %+v, want msg %d from %d", got, ack.MsgID, fx.sender)
	}

	// imd's view: the connection came from the Nginx hop (peer 127.0.0.1), the PROXY header
	// named the client (127.0.0.2), and every record of the sender carries the client's IP.
	if _, ok := srv.WaitLogRecord(5*time.Second, func(r map[string]any) bool {
		return r["msg"] == "connection accepted" && r["real_ip"] == clientIP && r["peer"] == "127.0.0.1"
	}); !ok {
		t.Fatalf("imd logged no connection accepted with real_ip %s from peer 127.0.0.1", clientIP)
	}
	sendRec, ok := srv.WaitLogRecord(5*time.Second, func(r map[string]any) bool {
		return r["msg"] == "tcp request" && fmt.Sprint(r["command"]) == strconv.Itoa(int(wire.CmdSendMessage)) &&
			fmt.Sprint(r["msg_id"]) == strconv.FormatInt(ack.MsgID, 10)
	})
	if !ok {
		t.Fatalf("imd logged no tcp request for msg_id %d", ack.MsgID)
	}
	if sendRec["real_ip"] != clientIP || fmt.Sprint(sendRec["user_id"]) != strconv.FormatInt(fx.sender, 10) {
		t.Fatalf("send record: real_ip %v user_id %v, want %s and %d", sendRec["real_ip"], sendRec["user_id"], clientIP, fx.sender)
	}
	for _, r := range srv.LogRecords() {
		if r["msg"] != "tcp request" {
			continue
		}
		switch fmt.Sprint(r["user_id"]) {
		case strconv.FormatInt(fx.sender, 10):
			if r["real_ip"] != clientIP {
				t.Fatalf("a request of the sender logged real_ip %v: %v", r["real_ip"], r)
			}
		case strconv.FormatInt(fx.receiver, 10):
			if r["real_ip"] != peerIP {
				t.Fatalf("a request of the receiver logged real_ip %v: %v", r["real_ip"], r)
			}
		}
	}
}

func checkRefused(t *testing.T, ctx context.Context, srv *Server, ngx *Nginx) {
	accepted := func() int {
		n := 0
		for _, r := range srv.LogRecords() {
			if r["msg"] == "connection accepted" {
				n++
			}
		}
		return n
	}
	before := accepted()
	for _, name := range []string{"evil." + ngx.Domain, "im.other-" + ngx.Domain, "api." + ngx.Domain + ".evil.test", ""} {
		d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(clientIP)}}
		// InsecureSkipVerify: the point is that no certificate at all is offered. An empty
		// ServerName with an IP address sends no SNI.
		conn, err := tls.DialWithDialer(d, "tcp", ngx.Addr, &tls.Config{ServerName: name, InsecureSkipVerify: true})
		if err == nil {
			cs := conn.ConnectionState()
			conn.Close()
			t.Fatalf("SNI %q: handshake succeeded, served %v", name, cs.PeerCertificates[0].DNSNames)
		}
		if !strings.Contains(err.Error(), "unrecognized name") {
			t.Fatalf("SNI %q: %v, want the unrecognized_name alert of ssl_reject_handshake", name, err)
		}
	}
	// Frames without TLS: the stream cannot be routed by SNI, so it ends in the sink.
	plain, err := client.Dial(ctx, client.Options{Addr: ngx.Addr, LocalAddr: clientIP, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Heartbeat(ctx); err == nil {
		t.Fatal("a plaintext HEARTBEAT through the TLS port was answered")
	}
	// The barrier: one good connection after the refused ones. A refused connection that did
	// reach imd was accepted, and logged, before this one, so once this one's record is read
	// every earlier one is too.
	marker, err := ngx.DialIM(ctx, clientIP)
	if err != nil {
		t.Fatalf("dial %s with SNI %s: %v", ngx.Addr, ngx.IMName(), err)
	}
	defer marker.Close()
	if err := marker.Heartbeat(ctx); err != nil {
		t.Fatalf("heartbeat of the marker connection: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); accepted() == before && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if after := accepted() - 1; after != before {
		t.Fatalf("imd accepted %d connections from refused clients", after-before)
	}
}

func checkAPIThroughNginx(t *testing.T, srv *Server, ngx *Nginx) {
	hc := ngx.HTTPClient(clientIP)
	base := "https://" + ngx.APIName()

	resp, err := hc.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz via %s: %v", ngx.Addr, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "ok") {
		t.Fatalf("GET /healthz: HTTP %d %q", resp.StatusCode, body)
	}
	if leaf := resp.TLS.PeerCertificates[0]; len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != ngx.APIName() {
		t.Fatalf("api served the certificate of %v", leaf.DNSNames)
	}

	// An admin call through Nginx: imd must log the client's address, taken from the
	// X-Real-IP Nginx sets (the one the client forged is replaced). The path is this call's
	// own: the fixture created users directly.
	path := "/admin/v1/tenants/" + srv.Tenant + "/friendships"
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(`{"user_a":2001,"user_b":2002}`))
	req.Header.Set("Authorization", "Bearer "+srv.AdminKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Real-IP", "203.0.113.66")
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	rec, ok := srv.WaitLogRecord(5*time.Second, func(r map[string]any) bool {
		return r["msg"] == "http request" && r["path"] == path
	})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST friendships via Nginx: HTTP %d", resp.StatusCode)
	}
	if !ok || rec["real_ip"] != clientIP || fmt.Sprint(rec["status"]) != strconv.Itoa(resp.StatusCode) {
		t.Fatalf("imd logged the admin call as %v, want ip %s and the status the client got (%d)", rec, clientIP, resp.StatusCode)
	}

	resp, err = hc.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /metrics through the public port: HTTP %d, want 404", resp.StatusCode)
	}
}

// checkDirectWithoutProxy: imd (proxy_protocol: true) closes a connection that does not
// start with a PROXY header — at once when other bytes come, after 3 s when nothing does.
func checkDirectWithoutProxy(t *testing.T, ctx context.Context, srv *Server, tlsCfg *tls.Config) {
	if tlsCfg != nil {
		// The ClientHello is not a PROXY header either.
		raw, err := net.Dial("tcp", srv.TCPAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		tc := tls.Client(raw, tlsCfg)
		_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tc.HandshakeContext(ctx); err == nil {
			t.Fatal("TLS handshake without PROXY header succeeded")
		}
	} else {
		c, err := client.Dial(ctx, client.Options{Addr: srv.TCPAddr, RequestTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Heartbeat(ctx); err == nil {
			t.Fatal("HEARTBEAT without PROXY header was answered")
		}
		select {
		case <-c.Closed():
		case <-time.After(5 * time.Second):
			t.Fatal("imd kept a connection without PROXY header open")
		}
	}
	if _, ok := srv.WaitLogRecord(5*time.Second, msgIs("bad PROXY header, closing")); !ok {
		t.Fatal("imd logged no bad PROXY header")
	}

	silent, err := net.Dial("tcp", srv.TCPAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	started := time.Now()
	_ = silent.SetReadDeadline(started.Add(10 * time.Second))
	_, err = silent.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("a silent connection without PROXY header stayed open: %v", err)
	}
	if waited := time.Since(started); waited < 2*time.Second {
		t.Fatalf("closed after %v, before the 3 s PROXY timeout", waited)
	}
	if _, ok := srv.WaitLogRecord(5*time.Second, msgIs("no PROXY header in time, closing")); !ok {
		t.Fatal("imd logged no PROXY timeout")
	}
}

// checkDirectWithProxy is the control: whoever reaches imd's listener with a PROXY header
// is believed, which is why imd listens on loopback only and Nginx is the only way in.
func checkDirectWithProxy(t *testing.T, ctx context.Context, srv *Server, fx nginxFixture, tlsCfg *tls.Config) {
	src := netip.MustParseAddrPort("198.51.100.7:40000")
	c, err := client.Dial(ctx, client.Options{Addr: srv.TCPAddr, ProxyHeader: 1, ProxySource: src, TLS: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Auth(ctx, fx.receiverToken, 7); err != nil {
		t.Fatalf("auth: %v", err)
	}
	if _, ok := srv.WaitLogRecord(5*time.Second, func(r map[string]any) bool {
		return r["msg"] == "tcp request" && r["real_ip"] == src.Addr().String() &&
			fmt.Sprint(r["command"]) == strconv.Itoa(int(wire.CmdAuth))
	}); !ok {
		t.Fatalf("imd logged no AUTH from real_ip %s", src.Addr())
	}
}

func waitMessage(t *testing.T, c *client.Conn, seq int64, limit time.Duration) wire.Message {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case p := <-c.Pushes():
			if p.Command == wire.CmdMessage && p.Message != nil && p.Message.Seq == seq {
				return *p.Message
			}
		case <-c.Closed():
			t.Fatalf("connection closed while waiting for seq %d: %v", seq, c.Err())
		case <-deadline:
			t.Fatalf("no MESSAGE seq %d within %v", seq, limit)
		}
	}
}

func msgIs(msg string) func(map[string]any) bool {
	return func(r map[string]any) bool { return r["msg"] == msg }
}

func loadRoots(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", path)
	}
	return pool
}

// TestNginxNativePassthrough checks the native wiring of the template without depending on
// imd's native TLS: a stand-in backend reads the PROXY header, then terminates TLS with a
// certificate Nginx does not have. The handshake verifying against that certificate proves
// Nginx passed the TLS through untouched, and the header must name the client.
func TestNginxNativePassthrough(t *testing.T) {
	RequireNginx(t)
	domain := NginxDomain()
	server, roots := tlstest.SelfSigned(t, "im."+domain)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go serveProxiedTLS(ln, server)
	ngx := StartNginx(t, NginxOptions{Mode: "native", Domain: domain, IMDTCP: ln.Addr().String(), IMDHTTP: freeAddr(t)})

	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(clientIP)}}
	conn, err := tls.DialWithDialer(d, "tcp", ngx.Addr, &tls.Config{ServerName: ngx.IMName(), RootCAs: roots})
	if err != nil {
		t.Fatalf("TLS through Nginx to the stand-in: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("src=%s sni=%s", conn.LocalAddr(), ngx.IMName())
	if strings.TrimSpace(line) != want {
		t.Fatalf("backend saw %q, want %q", strings.TrimSpace(line), want)
	}

	// The im route must not leak to other names in native mode either.
	if _, err := tls.DialWithDialer(d, "tcp", ngx.Addr, &tls.Config{ServerName: "imx." + domain, RootCAs: roots}); err == nil ||
		!strings.Contains(err.Error(), "unrecognized name") {
		t.Fatalf("unknown SNI in native mode: %v", err)
	}
}

// serveProxiedTLS is imd's native listener in miniature: PROXY header, TLS, then it writes
// what it learned and closes.
func serveProxiedTLS(ln net.Listener, server *tls.Config) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			var buf []byte
			chunk := make([]byte, 512)
			for {
				k, err := c.Read(chunk)
				if err != nil {
					return
				}
				buf = append(buf, chunk[:k]...)
				src, n, err := proxyhdr.Parse(buf)
				if errors.Is(err, proxyhdr.ErrIncomplete) {
					continue
				}
				if err != nil {
					return
				}
				tc := tls.Server(&prefixConn{Conn: c, r: io.MultiReader(bytes.NewReader(buf[n:]), c)}, server)
				if tc.Handshake() != nil {
					return
				}
				fmt.Fprintf(tc, "src=%s sni=%s\n", src, tc.ConnectionState().ServerName)
				return
			}
		}()
	}
}

type prefixConn struct {
	net.Conn
	r io.Reader
}

func (p *prefixConn) Read(b []byte) (int, error) { return p.r.Read(b) }
