package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
)

// Nginx is a private Nginx in front of one imd, started by deploy/local/nginx.sh from
// deploy/nginx/imd.conf.template: the same script, renderer and template as local runs
// and deploy/compose.yaml.
type Nginx struct {
	Addr    string // the public listener, 127.0.0.1:port
	Domain  string // serves im.<Domain> and api.<Domain>
	Mode    string // off | native
	CertDir string // ca.crt, im.crt, im.key, api.crt, api.key
	Roots   *x509.CertPool
	dir     string // <state>/nginx
	env     []string
	t       testing.TB
}

// NginxOptions say what Nginx fronts.
type NginxOptions struct {
	Mode     string // "off" (Nginx terminates TLS, the default) or "native" (TLS passthrough)
	Domain   string // default: a fresh <random>.imd.test
	IMDTCP   string // imd's TCP listener
	IMDHTTP  string // imd's HTTP listener
	StateDir string // default: a fresh directory; NginxCerts and StartNginx must share it
}

// RequireNginx skips the test when Nginx with the stream module, openssl or envsubst is
// missing, unless IMD_REQUIRE_SERVICES=1: then deploy/local/nginx.sh installs what is
// missing (as root) or the test fails.
func RequireNginx(t testing.TB) {
	t.Helper()
	missing := nginxMissing()
	if missing == "" {
		return
	}
	if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
		t.Logf("%s; deploy/local/nginx.sh will try to install it", missing)
		return
	}
	t.Skipf("%s: install nginx libnginx-mod-stream openssl gettext-base (deploy/local/nginx.sh up does)", missing)
}

func nginxMissing() string {
	for _, bin := range []string{"nginx", "openssl", "envsubst"} {
		if _, err := exec.LookPath(bin); err != nil {
			return bin + " not installed"
		}
	}
	out, _ := exec.Command("nginx", "-V").CombinedOutput()
	build := string(out)
	switch {
	case strings.Contains(build, "--with-stream=dynamic"):
		dir := "/usr/lib/nginx/modules"
		for _, f := range strings.Fields(build) {
			if v, ok := strings.CutPrefix(f, "--modules-path="); ok {
				dir = v
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "ngx_stream_module.so")); err != nil {
			return "the Nginx stream module is not installed (libnginx-mod-stream)"
		}
	case !strings.Contains(build, "--with-stream"):
		return "this Nginx has no stream module"
	}
	return ""
}

// NginxStateDir makes a state directory for deploy/local/nginx.sh, removed at cleanup. It
// is world-traversable: Nginx workers run as nobody and write temp files under it.
func NginxStateDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "imd-e2e-nginx-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// NginxDomain is a fresh domain for one test.
func NginxDomain() string { return "t" + randomHex(4) + ".imd.test" }

// NginxCerts makes the throwaway CA and the im/api certificates in stateDir for domain
// (`nginx.sh certs`) and returns their directory: imd in tcp.tls: native needs im.crt
// before it starts, i.e. before Nginx can be pointed at it.
func NginxCerts(t testing.TB, stateDir, domain string) string {
	t.Helper()
	out, err := runNginxScript([]string{"IMD_STATE_DIR=" + stateDir, "IMD_NGINX_DOMAIN=" + domain}, "certs")
	if err != nil {
		t.Fatalf("deploy/local/nginx.sh certs: %v\n%s", err, out)
	}
	return filepath.Join(stateDir, "nginx", "certs")
}

// StartNginx runs `deploy/local/nginx.sh up` on a free loopback port and stops it at
// cleanup (`down`).
func StartNginx(t testing.TB, o NginxOptions) *Nginx {
	t.Helper()
	RequireNginx(t)
	if o.Mode == "" {
		o.Mode = "off"
	}
	if o.Domain == "" {
		o.Domain = NginxDomain()
	}
	if o.StateDir == "" {
		o.StateDir = NginxStateDir(t)
	}
	n := &Nginx{
		Addr: freeAddr(t), Domain: o.Domain, Mode: o.Mode,
		dir: filepath.Join(o.StateDir, "nginx"), t: t,
	}
	n.CertDir = filepath.Join(n.dir, "certs")
	n.env = []string{
		"IMD_STATE_DIR=" + o.StateDir,
		"IMD_NGINX_DOMAIN=" + o.Domain,
		"IMD_NGINX_LISTEN=" + n.Addr,
		"IMD_NGINX_MODE=" + o.Mode,
		"IMD_NGINX_IMD_TCP=" + o.IMDTCP,
		"IMD_NGINX_IMD_HTTP=" + o.IMDHTTP,
		"IMD_NGINX_API_HOP=" + freeAddr(t),
		"IMD_NGINX_IM_HOP=" + freeAddr(t),
		"IMD_NGINX_SINK_HOP=" + freeAddr(t),
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nginx logs:\n%s", n.Logs())
		}
		if out, err := runNginxScript(n.env, "down"); err != nil {
			t.Errorf("deploy/local/nginx.sh down: %v\n%s", err, out)
		}
	})
	if out, err := runNginxScript(n.env, "up"); err != nil {
		t.Fatalf("deploy/local/nginx.sh up: %v\n%s\n%s", err, out, n.Logs())
	}
	pem, err := os.ReadFile(filepath.Join(n.CertDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	n.Roots = x509.NewCertPool()
	if !n.Roots.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s/ca.crt", n.CertDir)
	}
	return n
}

func runNginxScript(env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a first run may apt-get install
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(repoRoot(), "deploy", "local", "nginx.sh")}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// IMName and APIName are the SNI names Nginx routes.
func (n *Nginx) IMName() string  { return "im." + n.Domain }
func (n *Nginx) APIName() string { return "api." + n.Domain }

// TLSConfig trusts the throwaway CA and sends serverName as SNI.
func (n *Nginx) TLSConfig(serverName string) *tls.Config {
	return &tls.Config{ServerName: serverName, RootCAs: n.Roots, MinVersion: tls.VersionTLS12}
}

// DialIM connects through Nginx with SNI im.<domain> from localIP (e.g. 127.0.0.2; "" for
// any), without authenticating.
func (n *Nginx) DialIM(ctx context.Context, localIP string) (*client.Conn, error) {
	c, err := client.Dial(ctx, client.Options{
		Addr: n.Addr, TLS: n.TLSConfig(n.IMName()), LocalAddr: localIP, RequestTimeout: 15 * time.Second,
	})
	if err == nil {
		n.t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// HTTPClient sends every request to Nginx's public port from localIP, whatever the URL's
// host, which stays the SNI name: https://api.<domain>/healthz reaches imd's HTTP.
func (n *Nginx) HTTPClient(localIP string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if localIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(localIP)}
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", n.Addr)
		},
		TLSClientConfig:     &tls.Config{RootCAs: n.Roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 5 * time.Second,
	}
	n.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 15 * time.Second}
}

// Logs returns the tails of Nginx's error and access logs.
func (n *Nginx) Logs() string {
	var b strings.Builder
	for _, name := range []string{"error.log", "access.log", "nginx.out"} {
		raw, err := os.ReadFile(filepath.Join(n.dir, name))
		if err != nil {
			continue
		}
		s := string(raw)
		if len(s) > 6000 {
			s = "…" + s[len(s)-6000:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", name, strings.TrimSpace(s))
	}
	return b.String()
}

// LogSnapshot is everything imd has logged so far.
func (s *Server) LogSnapshot() string {
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	return s.logs.buf.String()
}

// LogRecords parses imd's JSON log lines (IMD_ENV=prod); other lines are left out. Numbers
// are json.Number: compare them with fmt.Sprint.
func (s *Server) LogRecords() []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.LogSnapshot()))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber() // ids exceed float64's exact range
		if dec.Decode(&rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// WaitLogRecord waits until imd has logged a record match accepts, and returns it.
func (s *Server) WaitLogRecord(limit time.Duration, match func(rec map[string]any) bool) (map[string]any, bool) {
	deadline := time.Now().Add(limit)
	for {
		for _, rec := range s.LogRecords() {
			if match(rec) {
				return rec, true
			}
		}
		if time.Now().After(deadline) {
			return nil, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TryStart is Start that reports a failed start as an error instead of failing the test,
// so a test can skip when imd rejects a configuration it does not support yet. The
// returned Server fails the test normally afterwards.
func TryStart(t testing.TB, o Options) (*Server, error) {
	t.Helper()
	RequireServices(t) // skips in this goroutine, not in the probing one
	p := &startProbe{TB: t, probing: true}
	var srv *Server
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv = Start(p, o)
	}()
	<-done
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probing = false
	if p.failure != "" {
		return nil, fmt.Errorf("%s", p.failure)
	}
	return srv, nil
}

// startProbe turns the Fatal of a Start into a recorded failure that ends only the
// goroutine running Start; once probing is over it fails the real test.
type startProbe struct {
	testing.TB
	mu      sync.Mutex
	probing bool
	failure string
}

func (p *startProbe) Fatal(args ...any)                 { p.fail(fmt.Sprint(args...)) }
func (p *startProbe) Fatalf(format string, args ...any) { p.fail(fmt.Sprintf(format, args...)) }
func (p *startProbe) FailNow()                          { p.fail("FailNow") }

func (p *startProbe) fail(msg string) {
	p.mu.Lock()
	probing := p.probing
	if probing {
		p.failure = msg
	}
	p.mu.Unlock()
	if probing {
		runtime.Goexit()
	}
	p.TB.Fatal(msg)
}
