package e2e

// Production storage and secrets (issue 20 item 5) through the real binary: secrets read
// from files (compose secrets), MySQL over TLS, media uploads and archived months on the
// S3-compatible server of deploy/local/services.sh.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/s3blob"
)

// s3Env is the environment that puts imd's uploads and archive on the test S3 server, under
// a prefix of this test; it skips without the server.
func s3Env(t *testing.T) (map[string]string, func(bucket string) []string) {
	t.Helper()
	endpoint := os.Getenv("IMD_TEST_S3_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("IMD_TEST_S3_ENDPOINT is unset and IMD_REQUIRE_SERVICES=1")
		}
		t.Skip("IMD_TEST_S3_ENDPOINT is unset")
	}
	prefix := "e2e-" + randomHex(6) + "/"
	ak, sk := os.Getenv("IMD_TEST_S3_ACCESS_KEY"), os.Getenv("IMD_TEST_S3_SECRET_KEY")
	env := map[string]string{}
	for section, bucket := range map[string]string{"ARCHIVE": "imd-archive", "UPLOADS": "imd-uploads"} {
		env["IMD_"+section+"_STORE"] = "s3"
		for k, v := range map[string]string{"ENDPOINT": endpoint, "REGION": "us-east-1", "BUCKET": bucket, "ACCESS_KEY": ak,
			"SECRET_KEY": sk, "PREFIX": prefix, "PATH_STYLE": "true"} {
			env["IMD_"+section+"_S3_"+k] = v
		}
	}
	list := func(bucket string) []string {
		s, err := s3blob.New(s3blob.Config{Endpoint: endpoint, Region: "us-east-1", Bucket: bucket, AccessKey: ak, SecretKey: sk, Prefix: prefix, PathStyle: true})
		if err != nil {
			t.Fatal(err)
		}
		keys, err := s.List(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	t.Cleanup(func() {
		for _, bucket := range []string{"imd-archive", "imd-uploads"} {
			s, _ := s3blob.New(s3blob.Config{Endpoint: endpoint, Region: "us-east-1", Bucket: bucket, AccessKey: ak, SecretKey: sk, Prefix: prefix, PathStyle: true})
			for _, k := range list(bucket) {
				_ = s.Delete(context.Background(), k)
			}
		}
	})
	return env, list
}

func TestProductionStorageAndSecrets(t *testing.T) {
	svc := RequireServices(t)
	env, list := s3Env(t)
	secrets := t.TempDir()
	for name, value := range map[string]string{"admin_key": "e2e-admin-key\n", "token_secret": "e2e-token-secret-from-a-file-0123\n", "mysql_dsn": svc.MySQLDSN + "\n"} {
		path := filepath.Join(secrets, name)
		if err := os.WriteFile(path, []byte(value), 0o600); err != nil {
			t.Fatal(err)
		}
		key := "IMD_" + strings.ToUpper(name)
		env[key] = "" // the harness's plain value gives way to the file
		env[key+"_FILE"] = path
	}
	env["IMD_MYSQL_TLS_ENABLED"] = "true"
	env["IMD_MYSQL_TLS_CA_FILE"] = filepath.Join(os.Getenv("IMD_TEST_TLS_DIR"), "ca.crt")
	srv := Start(t, Options{Env: env})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Media: the client PUTs straight to the bucket on the presigned URL and reads it back.
	token := srv.User(5)
	body := bytes.Repeat([]byte("media "), 100)
	var grant struct {
		Key, URL string
		Headers  map[string]string
	}
	if code, e := call(t, srv, token, "POST", "/api/v1/uploads", map[string]any{"content_type": "image/png", "size": len(body)}, &grant); code != http.StatusOK {
		t.Fatalf("upload grant: HTTP %d %+v", code, e)
	}
	if !strings.HasPrefix(grant.URL, os.Getenv("IMD_TEST_S3_ENDPOINT")+"/imd-uploads/") {
		t.Fatalf("upload URL %s is not the bucket's", grant.URL)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, grant.URL, bytes.NewReader(body))
	for k, v := range grant.Headers {
		req.Header.Set(k, v)
	}
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT to the presigned URL: %v %v", resp, err)
	}
	var download struct{ URL string }
	if code, e := call(t, srv, token, "POST", "/api/v1/downloads", map[string]any{"key": grant.Key}, &download); code != http.StatusOK {
		t.Fatalf("download grant: HTTP %d %+v", code, e)
	}
	resp, err := http.Get(download.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
		t.Fatalf("GET of the presigned URL: %d, %d bytes", resp.StatusCode, len(got))
	}
	if keys := list("imd-uploads"); len(keys) != 1 || keys[0] != grant.Key {
		t.Fatalf("uploads bucket holds %v, want [%s]", keys, grant.Key)
	}

	// An archived month lives in the bucket; dropped from MySQL, it reads as before.
	g := newArchivedGroup(t, srv, ctx, 93)
	srv.dropHot(ctx, g.topic)
	before := g.views(t, srv)
	db := srv.TenantDB()
	seal(t, db, g.m3)
	srv.monthOp("archive", g.m3)
	srv.monthOp("drop", g.m3)
	if tableExists(t, db, g.m3) {
		t.Fatal("the month table is still there after drop")
	}
	keys := list("imd-archive")
	if !containsSuffix(keys, "/manifest.json") {
		t.Fatalf("archive bucket holds no manifest: %v", keys)
	}
	sameAnswers(t, "archived on S3 and dropped", g.views(t, srv), before, "user /api/v1/search")
}

func containsSuffix(keys []string, suffix string) bool {
	for _, k := range keys {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// TestCheckAndVersion: `imd check` prints the effective configuration with its secrets
// masked and refuses a misspelt variable; `imd --version` names the build.
func TestCheckAndVersion(t *testing.T) {
	bin := Binary(t)
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	base := []string{"IMD_ADMIN_KEY=hunter2-admin", "IMD_TOKEN_SECRET=hunter2-token-secret-0123", "IMD_TENANTS=acme",
		"IMD_MYSQL_DSN=imd:hunter2-db@tcp(127.0.0.1:3306)/"}
	out, err := run(base, "check")
	if err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	}
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "dsn: imd:********@tcp(127.0.0.1:3306)/") || !strings.Contains(out, "- name: acme") {
		t.Fatalf("check printed:\n%s", out)
	}
	if out, err := run(append(base, "IMD_TCP_ADR=127.0.0.1:1"), "check"); err == nil || !strings.Contains(out, "IMD_TCP_ADR") {
		t.Fatalf("check with a misspelt variable: %v\n%s", err, out)
	}
	if out, err := run(nil, "--version"); err != nil || !strings.HasPrefix(out, "imd ") || !strings.Contains(out, "go1.") {
		t.Fatalf("--version: %v %q", err, out)
	}
}
