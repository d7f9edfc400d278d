// Package e2e drives a real imd binary, built from this checkout, against the real MariaDB and
// Redis started by deploy/local/services.sh, from the outside: TCP frames and the admin API.
package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"

	_ "github.com/go-sql-driver/mysql"
)

// Services are the real dependencies the suite runs against.
type Services struct {
	MySQLDSN  string
	RedisAddr string
}

// RequireServices returns the services from the environment, skipping the test when they are
// absent unless IMD_REQUIRE_SERVICES=1 (what `go tool task test` sets).
func RequireServices(t testing.TB) Services {
	t.Helper()
	s := Services{MySQLDSN: os.Getenv("IMD_TEST_MYSQL_DSN"), RedisAddr: os.Getenv("IMD_TEST_REDIS_ADDR")}
	if s.MySQLDSN == "" || s.RedisAddr == "" {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("IMD_TEST_MYSQL_DSN and IMD_TEST_REDIS_ADDR are required")
		}
		t.Skip("real services not configured; run `go tool task test`")
	}
	return s
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds cmd/imd once per test process.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "imd-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "imd")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/imd")
		cmd.Dir = repoRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/imd: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// Server is one running imd process with its own tenant database.
type Server struct {
	Tenant   string
	TCPAddr  string
	HTTPAddr string
	AdminKey string
	cmd      *exec.Cmd
	env      map[string]string
	exited   chan struct{} // closed when cmd has exited
	exitErr  error         // cmd.Wait's result, readable after exited
	logs     *lockedBuffer
	t        testing.TB
}

// Options tweak a server's config.
type Options struct {
	Env map[string]string // extra IMD_* overrides
	// Tenant joins an existing tenant (a second node of the same deployment) instead of
	// creating a fresh one; its database is then left to the first node's cleanup.
	Tenant string
	// ExpectExit is for a process that must refuse to start: Start does not wait for it to be
	// ready; WaitExit collects its end.
	ExpectExit bool
}

// Start runs imd for one test with a fresh tenant, and stops it at cleanup.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	svc := RequireServices(t)
	Binary(t)
	tenant, owner := o.Tenant, o.Tenant == ""
	if owner {
		tenant = "e2e_" + randomHex(6)
	}
	s := &Server{
		Tenant: tenant, TCPAddr: freeAddr(t), HTTPAddr: freeAddr(t), AdminKey: "e2e-admin-key",
		logs: &lockedBuffer{}, t: t,
	}
	env := map[string]string{
		"IMD_ENV": "prod", "IMD_ADMIN_KEY": s.AdminKey, "IMD_TOKEN_SECRET": "e2e-token-secret-0123456789",
		"IMD_MYSQL_DSN": svc.MySQLDSN, "IMD_REDIS_ADDR": svc.RedisAddr,
		"IMD_TENANTS": tenant + ":imd_" + tenant, "IMD_HTTP_ADDR": s.HTTPAddr, "IMD_TCP_ADDR": s.TCPAddr,
		"IMD_DELIVER_TAKE_TIMEOUT": "1s", "IMD_SHUTDOWN_TIMEOUT": "10s",
		// No balancer to wait for: a test's node drains its clients at once unless the test
		// sets its own grace and window (rolling_test.go).
		"IMD_SHUTDOWN_UNREADY_GRACE": "0s", "IMD_SHUTDOWN_DRAIN_WINDOW": "0s",
		// Archive files and search indexes of this process only, removed with the test.
		"IMD_ARCHIVE_DIR": t.TempDir(), "IMD_SEARCH_DIR": t.TempDir(),
	}
	// Tests drive many requests from one loopback address; the rate-limit tests set their own
	// budgets, everyone else runs unlimited (0).
	for _, scope := range []string{"IMD_RATE_LIMIT_", "IMD_RATE_LIMIT_PER_IP_"} {
		for _, budget := range []string{"MESSAGE_PER_SECOND", "AUTH_PER_SECOND", "SYNC_INBOX_PER_MINUTE", "SYNC_MESSAGES_PER_MINUTE", "HISTORY_PER_MINUTE", "HTTP_PER_SECOND"} {
			env[scope+budget] = "0"
		}
	}
	for k, v := range o.Env {
		env[k] = v
	}
	t.Cleanup(func() {
		s.Stop()
		if owner {
			dropDatabase(svc.MySQLDSN, "imd_"+tenant)
		}
		if t.Failed() {
			t.Logf("imd log tail:\n%s", s.logs.tail(8000))
		}
	})
	s.env = env
	s.launch()
	if !o.ExpectExit {
		s.waitReady(30 * time.Second)
	}
	return s
}

// Restart starts the process again on the same addresses, tenant and config after Stop or
// Kill, and waits until it is ready.
func (s *Server) Restart() {
	s.t.Helper()
	s.launch()
	s.waitReady(30 * time.Second)
}

func (s *Server) launch() {
	s.t.Helper()
	cmd := exec.Command(Binary(s.t))
	// Only the IMD_ variables of this test: the shell's test knobs (IMD_MIGRATION_ROWS…) are
	// no config keys, and imd refuses unknown IMD_ variables.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IMD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range s.env {
		if v != "" { // an empty value in Options.Env takes a variable away
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start imd: %v", err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func(exited chan struct{}) { s.exitErr = cmd.Wait(); close(exited) }(s.exited)
}

// WaitExit waits up to limit for the process to end by itself and returns its exit code.
func (s *Server) WaitExit(limit time.Duration) int {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(limit):
		s.t.Fatalf("imd still running after %v; log:\n%s", limit, s.logs.tail(8000))
	}
	s.cmd = nil
	if s.exitErr == nil {
		return 0
	}
	var exit *exec.ExitError
	if errors.As(s.exitErr, &exit) {
		return exit.ExitCode()
	}
	s.t.Fatalf("wait imd: %v", s.exitErr)
	return -1
}

// Logs is everything the process wrote so far.
func (s *Server) Logs() string { return s.logs.tail(1 << 30) }

// Stop ends the process with SIGTERM (graceful), waiting for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Kill ends the process abruptly (crash), without any shutdown work.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

func (s *Server) waitReady(limit time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			s.t.Fatalf("imd exited during start; log:\n%s", s.logs.tail(8000))
		default:
		}
		resp, err := http.Get("http://" + s.HTTPAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("imd not ready within %v; log:\n%s", limit, s.logs.tail(8000))
}

// Admin calls the admin API and decodes the JSON answer into out (if not nil); it returns the
// HTTP status.
func (s *Server) Admin(method, path string, body, out any) int {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+s.HTTPAddr+"/admin/v1/tenants/"+s.Tenant+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

// MustAdmin is Admin that fails the test on a non-2xx status.
func (s *Server) MustAdmin(method, path string, body, out any) {
	s.t.Helper()
	if code := s.Admin(method, path, body, out); code/100 != 2 {
		s.t.Fatalf("%s %s: HTTP %d", method, path, code)
	}
}

// User creates a user and returns a token for it.
func (s *Server) User(id int64) string {
	s.t.Helper()
	s.MustAdmin("POST", "/users", map[string]any{"user_id": id}, nil)
	return s.Token(id)
}

// Token issues another token for an existing user.
func (s *Server) Token(id int64) string {
	s.t.Helper()
	var tok struct {
		Token string `json:"token"`
	}
	s.MustAdmin("POST", "/tokens", map[string]any{"user_id": id}, &tok)
	return tok.Token
}

// Group creates a group and returns its topic.
func (s *Server) Group(id, owner int64, members ...int64) string {
	s.t.Helper()
	var g struct {
		Topic string `json:"topic"`
	}
	s.MustAdmin("POST", "/groups", map[string]any{"group_id": id, "owner": owner, "members": members}, &g)
	return g.Topic
}

// Connect dials the TCP listener and authenticates.
func (s *Server) Connect(ctx context.Context, token string, device uint64) *client.Conn {
	s.t.Helper()
	c := s.Dial(ctx)
	if _, err := c.Auth(ctx, token, device); err != nil {
		s.t.Fatalf("auth: %v", err)
	}
	return c
}

// ConnectLive authenticates as Connect does, subscribed to the live pushes (PRESENCE,
// TYPING_NOTICE, RECEIPT), which a plain Connect never gets (docs/PROTOCOL.md, AUTH).
func (s *Server) ConnectLive(ctx context.Context, token string, device uint64) *client.Conn {
	s.t.Helper()
	c := s.Dial(ctx)
	live := []string{wire.SubscribePresence, wire.SubscribeTyping, wire.SubscribeReceipt}
	me, err := c.AuthWith(ctx, wire.AuthRequest{Token: token, DeviceID: device, Subscribe: live})
	if err != nil {
		s.t.Fatalf("auth: %v", err)
	}
	if !slices.Equal(me.Subscribed, live) {
		s.t.Fatalf("AUTH subscribed %v, want %v", me.Subscribed, live)
	}
	return c
}

// Dial opens a TCP connection without authenticating.
func (s *Server) Dial(ctx context.Context) *client.Conn {
	s.t.Helper()
	c, err := client.Dial(ctx, client.Options{Addr: s.TCPAddr, RequestTimeout: 15 * time.Second})
	if err != nil {
		s.t.Fatalf("dial: %v", err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// freePortLow and freePortHigh bound the ports freeAddr hands out; it walks them in turn from
// a random start, so no two calls of this test process get the same one (two addresses asked
// for at once are both still free when each is checked).
const freePortLow, freePortHigh = 27000, 32768

var (
	freePortStart = mathrand.IntN(freePortHigh - freePortLow)
	freePortNext  atomic.Int64
)

// freeAddr is a loopback address nothing listens on, for a process this test starts. Its port
// is below the kernel's ephemeral range (32768–60999 by default) and above the fixed ports of
// deploy/local/services.sh: a port of that range can be taken between this check and its use
// by the local end of any outgoing connection or a listener on :0 (CI: Nginx could not bind
// the one it was given).
func freeAddr(t testing.TB) string {
	t.Helper()
	for range 100 {
		port := freePortLow + (freePortStart+int(freePortNext.Add(1)))%(freePortHigh-freePortLow)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		return addr
	}
	t.Fatalf("no free loopback port in [%d, %d) after 100 tries", freePortLow, freePortHigh)
	return ""
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}

func dropDatabase(dsn, db string) {
	conn, err := sql.Open("mysql", dsn)
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = conn.Exec("DROP DATABASE IF EXISTS `" + db + "`")
}
