package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/tlstest"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/proxyheader"
	"github.com/imdhq/imd/clients/go/wire"
)

// startNativeIMD runs imd in tcp.tls: native with proxy_protocol: true and the im certificate
// of `nginx.sh certs` (which also installs openssl when it is missing), made in state for
// domain.
func startNativeIMD(t *testing.T) (srv *Server, certs, state, domain string) {
	t.Helper()
	RequireServices(t)
	state = NginxStateDir(t)
	domain = NginxDomain()
	certs = NginxCerts(t, state, domain)
	env := map[string]string{
		"IMD_TCP_TLS":       "native",
		"IMD_TCP_CERT_FILE": filepath.Join(certs, "im.crt"),
		"IMD_TCP_KEY_FILE":  filepath.Join(certs, "im.key"),
	}
	for k, v := range proxiedEnv {
		env[k] = v
	}
	return Start(t, Options{Env: env}), certs, state, domain
}

// imTLSConfig is the Go client's configuration for im.<domain> under the throwaway CA.
func imTLSConfig(domain string, roots *x509.CertPool) *tls.Config {
	return &tls.Config{ServerName: "im." + domain, RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// opensslSource is the client address the proxy's PROXY header gives connection i.
func opensslSource(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(10 + i)}), 40000)
}

// sClient is one `openssl s_client` session: frames go to its stdin, its stdout is the
// decrypted stream.
type sClient struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	wmu     sync.Mutex
	frames  chan frame.Frame
	stderr  lockedBuffer
	readErr error
	srv     *Server // its closing records explain a stream that ended
}

// why is what explains a failure: s_client's stderr and imd's records of closed or failed
// connections.
func (s *sClient) why() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s_client stderr: %s", s.stderr.tail(2000))
	for _, r := range s.srv.LogRecords() {
		if msg := fmt.Sprint(r["msg"]); strings.Contains(msg, "closing") || strings.Contains(msg, "TLS") || r["level"] == "ERROR" {
			fmt.Fprintf(&b, "\nimd: %v", r)
		}
	}
	return b.String()
}

func startSClient(t *testing.T, srv *Server, addr, serverName, caFile string, args ...string) *sClient {
	t.Helper()
	// -nocommands: without it s_client reads a write whose first byte is Q, R, K or k as a
	// command (quit, renegotiate, key update) instead of sending it, and a frame can start so.
	all := append([]string{"s_client", "-connect", addr, "-servername", serverName, "-CAfile", caFile,
		"-verify_return_error", "-brief", "-no_ign_eof", "-nocommands"}, args...)
	cmd := exec.Command("openssl", all...)
	s := &sClient{cmd: cmd, frames: make(chan frame.Frame, 1024), srv: srv}
	cmd.Stderr = &s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("openssl s_client: %v", err)
	}
	t.Cleanup(func() {
		_ = s.stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	go func() {
		defer close(s.frames)
		var buf []byte
		chunk := make([]byte, 64<<10)
		for {
			for {
				f, n, err := frame.Decode(buf)
				if errors.Is(err, frame.ErrIncomplete) {
					break
				}
				if err != nil {
					s.readErr = fmt.Errorf("decode: %w", err)
					return
				}
				buf = buf[n:]
				s.frames <- f
			}
			n, err := stdout.Read(chunk)
			buf = append(buf, chunk[:n]...)
			if err != nil {
				s.readErr = err
				return
			}
		}
	}()
	return s
}

func (s *sClient) write(t *testing.T, b []byte) {
	t.Helper()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.stdin.Write(b); err != nil {
		t.Fatalf("s_client stdin: %v\n%s", err, s.why())
	}
}

func (s *sClient) next(t *testing.T, limit time.Duration) frame.Frame {
	t.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			t.Fatalf("s_client stream ended: %v\n%s", s.readErr, s.why())
		}
		return f
	case <-time.After(limit):
		t.Fatalf("nothing from s_client in %v\n%s", limit, s.why())
	}
	return frame.Frame{}
}

func mustFrame(t *testing.T, cmd uint16, seq uint32, body any, compressMin int) []byte {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	f, err := frame.Append(nil, cmd, uint64(seq), seq, raw, compressMin)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestNativeTLSOpenSSLClient: an OpenSSL client, TLS 1.2 and 1.3, new and resumed sessions,
// does over native TLS what plaintext clients do: AUTH as its first frame, many SEND_MESSAGEs
// in flight at once (half of them zlib-compressed) while MESSAGE pushes from another sender
// arrive on the same connection and are acknowledged, and a HEARTBEAT — every request
// answered once, every push received, every byte imd sent a TLS record.
func TestNativeTLSOpenSSLClient(t *testing.T) {
	srv, certs, _, domain := startNativeIMD(t)
	fx := newNginxFixture(srv)
	proxy := tlstest.NewProxy(t, srv.TCPAddr, func(i int) []byte {
		return proxyheader.AppendV2(nil, opensslSource(i), netip.MustParseAddrPort("127.0.0.1:443"))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	roots := loadRoots(t, filepath.Join(certs, "ca.crt"))
	sender, err := client.Dial(ctx, client.Options{Addr: srv.TCPAddr, ProxyHeader: 2,
		TLS: imTLSConfig(domain, roots)})
	if err != nil {
		t.Fatalf("Go client: %v", err)
	}
	defer sender.Close()
	if _, err := sender.Auth(ctx, fx.senderToken, 1); err != nil {
		t.Fatalf("sender auth: %v", err)
	}

	const sends, pushes = 60, 20
	conn := 0
	for _, version := range []string{"-tls1_2", "-tls1_3"} {
		session := filepath.Join(t.TempDir(), "session.pem")
		for _, resumed := range []bool{false, true} {
			name := fmt.Sprintf("%s resumed=%v", strings.TrimPrefix(version, "-"), resumed)
			sessionArg := "-sess_out"
			if resumed {
				sessionArg = "-sess_in"
			}
			source := opensslSource(conn)
			conn++
			t.Run(name, func(t *testing.T) {
				s := startSClient(t, srv, proxy.Addr(), "im."+domain, filepath.Join(certs, "ca.crt"), version, sessionArg, session)
				device := uint64(100 + conn)
				s.write(t, mustFrame(t, wire.CmdAuth, 1, wire.AuthRequest{Token: fx.receiverToken, DeviceID: device}, 0))
				if f := s.next(t, 15*time.Second); f.Command != wire.ResponseCommand(wire.CmdAuth) || f.SequenceID != 1 || envCode(t, f) != wire.CodeOK {
					t.Fatalf("AUTH answer: command %d seq %d", f.Command, f.SequenceID)
				}
				var batch []byte
				long := strings.Repeat("pipelined through openssl ", 30)
				for i := range sends {
					text := "short"
					if i%2 == 0 {
						text = long
					}
					req := textMessage(fx.topic, fmt.Sprintf("ossl-%s-%d-%s", name, i, randomHex(3)), text)
					batch = append(batch, mustFrame(t, wire.CmdSendMessage, uint32(2+i), req, 64)...)
				}
				batch = append(batch, mustFrame(t, wire.CmdHeartbeat, uint32(2+sends), struct{}{}, 0)...)
				var pushing sync.WaitGroup
				defer pushing.Wait()
				pushing.Go(func() { // pushes to this connection race its answers
					for i := range pushes {
						if _, err := sender.Send(ctx, textMessage(fx.topic, fmt.Sprintf("push-%s-%d-%s", name, i, randomHex(3)), long)); err != nil {
							t.Errorf("sender: %v", err)
							return
						}
					}
				})
				s.write(t, batch)

				answered := map[uint32]bool{}
				got := 0
				for len(answered) < sends+1 || got < pushes {
					f := s.next(t, 30*time.Second)
					if f.Command == wire.CmdMessage {
						got++
						s.write(t, mustFrame(t, wire.CmdPushAck, f.SequenceID, struct{}{}, 0))
						continue
					}
					want := wire.ResponseCommand(wire.CmdSendMessage)
					if f.SequenceID == uint32(2+sends) {
						want = wire.ResponseCommand(wire.CmdHeartbeat)
					}
					if f.Command != want || answered[f.SequenceID] || f.SequenceID < 2 || f.SequenceID > uint32(2+sends) {
						t.Fatalf("unexpected answer: command %d seq %d (seen before: %v)", f.Command, f.SequenceID, answered[f.SequenceID])
					}
					if code := envCode(t, f); code != wire.CodeOK {
						t.Fatalf("seq %d: code %d", f.SequenceID, code)
					}
					answered[f.SequenceID] = true
				}
				rec, ok := srv.WaitLogRecord(5*time.Second, func(r map[string]any) bool {
					return r["msg"] == "connection accepted" && r["real_ip"] == source.Addr().String()
				})
				if !ok {
					t.Fatalf("imd logged no accepted connection from %s", source.Addr())
				}
				wantVersion := map[string]string{"-tls1_2": "TLS 1.2", "-tls1_3": "TLS 1.3"}[version]
				if rec["tls_version"] != wantVersion || rec["tls_resumed"] != resumed {
					t.Fatalf("imd accepted %v resumed=%v, want %s resumed=%v", rec["tls_version"], rec["tls_resumed"], wantVersion, resumed)
				}
			})
		}
	}
	if proxy.Connections() != conn {
		t.Fatalf("%d connections through the checking proxy, want %d", proxy.Connections(), conn)
	}
}

func envCode(t *testing.T, f frame.Frame) int {
	t.Helper()
	var env wire.Envelope
	if err := json.Unmarshal(f.Body, &env); err != nil {
		t.Fatalf("envelope of command %d: %v", f.Command, err)
	}
	return env.Code
}

// pythonClient is adapters/tcp/server/testdata/pipeline_client.py: an OpenSSL client (Python's
// ssl module) that drives one SSL object from one thread, as OpenSSL requires.
const pythonClient = "../adapters/tcp/server/testdata/pipeline_client.py"

// runPythonClient runs the Python client against imd's native listener with args over the
// defaults and returns its verdict.
func runPythonClient(t *testing.T, srv *Server, certs, domain string, args map[string]any) (answered int, errs []string) {
	t.Helper()
	ap := netip.MustParseAddrPort(srv.TCPAddr)
	cfg := map[string]any{"host": ap.Addr().String(), "port": ap.Port(), "ca": filepath.Join(certs, "ca.crt"),
		"sni": "im." + domain, "timeout": 60}
	for k, v := range args {
		cfg[k] = v
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "python3", pythonClient, string(raw)).Output()
	var run struct {
		Answered int      `json:"answered"`
		Errors   []string `json:"errors"`
	}
	if jerr := json.Unmarshal(out, &run); jerr != nil {
		t.Fatalf("python3 client: %v (exit: %v), stdout %q", jerr, err, out)
	}
	return run.Answered, run.Errors
}

// Issue 34 as a client app meets it: an OpenSSL client pipelines through imd's native TLS
// over the real send path (MySQL, Redis, delivery to the same user's other connections, whose
// pushes interleave with the answers and are PUSH_ACKed): 8 connections × 150 SEND_MESSAGEs
// written back to back, one record per frame or several in one, bodies across the compression
// threshold; then 40 fresh connections whose first frame is answered. TLS 1.2 and 1.3.
func TestNativeTLSPythonClientPipelines(t *testing.T) {
	srv, certs, _, domain := startNativeIMD(t)
	fx := newNginxFixture(srv)
	const connections, sends = 8, 150
	for i, version := range []string{"1.3", "1.2"} {
		t.Run("TLS "+version, func(t *testing.T) {
			answered, errs := runPythonClient(t, srv, certs, domain, map[string]any{
				"mode": "pipeline", "tls": version, "connections": connections, "sends": sends, "seed": i,
				"tokens": []string{fx.receiverToken}, "topic": fx.topic, "max_body": 700, "compress_min": 512, "coalesce": 0.1,
			})
			if len(errs) > 0 || answered != connections*sends {
				t.Fatalf("%d of %d answered, errors %v", answered, connections*sends, errs)
			}
			if _, errs := runPythonClient(t, srv, certs, domain, map[string]any{
				"mode": "first", "tls": version, "connections": 40, "timeout": 30,
				"tokens": []string{fx.receiverToken, fx.senderToken},
			}); len(errs) > 0 {
				t.Fatalf("first frames: %v", errs)
			}
		})
	}
	if rec, ok := srv.WaitLogRecord(0, func(r map[string]any) bool {
		err, _ := r["err"].(string)
		return strings.Contains(err, "tls")
	}); ok {
		t.Fatalf("imd logged a TLS error: %v", rec)
	}
}
