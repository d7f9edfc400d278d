package redis

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// privateRedis is a redis-server of one test, with a password on the default user, an ACL
// user and a TLS port whose certificate is services.sh's throwaway CA's.
type privateRedis struct {
	plain, tls string // addresses
	roots      *x509.CertPool
}

const (
	requirePass = "imd-test-requirepass"
	aclUser     = "imdapp"
	aclPass     = "imd-test-acl-password"
)

func startPrivateRedis(t *testing.T) privateRedis {
	t.Helper()
	testClient(t) // skips, or fails under IMD_REQUIRE_SERVICES, like every Redis test
	dir := os.Getenv("IMD_TEST_TLS_DIR")
	if dir == "" {
		t.Fatal("IMD_TEST_TLS_DIR is unset: run deploy/local/services.sh up and eval its env")
	}
	pem, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatal("no CA certificate in " + dir)
	}
	plainPort, tlsPort := freePort(t), freePort(t)
	conf := filepath.Join(t.TempDir(), "redis.conf")
	if err := os.WriteFile(conf, []byte(strings.Join([]string{
		"bind 127.0.0.1", "port " + plainPort, `save ""`, "appendonly no", "dir " + filepath.Dir(conf),
		"requirepass " + requirePass, "user " + aclUser + " on >" + aclPass + " ~* &* +@all",
		"tls-port " + tlsPort, "tls-cert-file " + filepath.Join(dir, "server.crt"), "tls-key-file " + filepath.Join(dir, "server.key"),
		"tls-ca-cert-file " + filepath.Join(dir, "ca.crt"), "tls-auth-clients no",
	}, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command("redis-server", conf)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	r := privateRedis{plain: net.JoinHostPort("127.0.0.1", plainPort), tls: net.JoinHostPort("127.0.0.1", tlsPort), roots: roots}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", r.plain)
		if err == nil {
			c.Close()
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("private redis-server did not listen: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestOpenAuthAndTLS: Open reaches a Redis with requirepass, an ACL user and TLS only with the
// right credentials and a trusted certificate, and the client then works.
func TestOpenAuthAndTLS(t *testing.T) {
	r := startPrivateRedis(t)
	trusted := &tls.Config{RootCAs: r.roots, MinVersion: tls.VersionTLS12}
	untrusted := &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
	tests := []struct {
		name   string
		addr   string
		opts   []Option
		wantOK bool
	}{
		{"no password", r.plain, nil, false},
		{"wrong password", r.plain, []Option{WithAuth("", "wrong")}, false},
		{"requirepass", r.plain, []Option{WithAuth("", requirePass)}, true},
		{"acl user", r.plain, []Option{WithAuth(aclUser, aclPass)}, true},
		{"acl user, wrong password", r.plain, []Option{WithAuth(aclUser, requirePass)}, false},
		{"tls and acl user", r.tls, []Option{WithAuth(aclUser, aclPass), WithTLS(trusted)}, true},
		{"tls, untrusted certificate", r.tls, []Option{WithAuth(aclUser, aclPass), WithTLS(untrusted)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Open(ctx, tt.addr, tt.opts...)
			if !tt.wantOK {
				if err == nil {
					c.Close()
					t.Fatal("Open succeeded")
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer c.Close()
			// A port on top: its Lua script runs over the authenticated connection.
			if err := NewSeqAllocator(c, 0).Reseed(ctx, "acme", "grp_1", 41); err != nil {
				t.Fatalf("Reseed over the authenticated client: %v", err)
			}
			got, err := c.Do(ctx, c.B().Keys().Pattern("*").Build()).AsStrSlice()
			if err != nil || len(got) == 0 {
				t.Fatalf("keys after Reseed = %v, %v", got, err)
			}
			c.Do(ctx, c.B().Flushall().Build())
		})
	}
}
