package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSecretFiles: every secret key takes IMD_<KEY>_FILE (compose and Kubernetes secrets),
// without the file's line end.
func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := Load(writeConfig(t, validYAML), []string{
		"IMD_ADMIN_KEY_FILE=" + file("admin", "file-admin-key\n"),
		"IMD_TOKEN_SECRET_FILE=" + file("token", "file-token-secret-0123456789\r\n"),
		"IMD_MYSQL_DSN_FILE=" + file("dsn", "imd:pw@tcp(db:3306)/\n"),
		"IMD_REDIS_PASSWORD_FILE=" + file("redis", "redis-pw"),
		"IMD_UPLOADS_SECRET_FILE=" + file("uploads", "uploads-secret\n"),
		"IMD_ARCHIVE_S3_ACCESS_KEY_FILE=" + file("ak", "AKID\n"),
		"IMD_ARCHIVE_S3_SECRET_KEY_FILE=" + file("sk", "s3-secret\n"),
		"IMD_UPLOADS_S3_SECRET_KEY_FILE=" + file("usk", "uploads-s3-secret\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ key, got, want string }{
		{"admin_key", cfg.AdminKey, "file-admin-key"},
		{"token_secret", cfg.TokenSecret, "file-token-secret-0123456789"},
		{"mysql.dsn", cfg.MySQL.DSN, "imd:pw@tcp(db:3306)/"},
		{"redis.password", cfg.Redis.Password, "redis-pw"},
		{"uploads.secret", cfg.Uploads.Secret, "uploads-secret"},
		{"archive.s3.access_key", cfg.Archive.S3.AccessKey, "AKID"},
		{"archive.s3.secret_key", cfg.Archive.S3.SecretKey, "s3-secret"},
		{"uploads.s3.secret_key", cfg.Uploads.S3.SecretKey, "uploads-s3-secret"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.key, tt.got, tt.want)
		}
	}
}

// TestToolingVariablesIgnored: the variables of the project's scripts and tests may sit in
// the shell imd starts from.
func TestToolingVariablesIgnored(t *testing.T) {
	_, err := Load(writeConfig(t, validYAML), []string{
		"IMD_CONFIG=/etc/imd.yaml", "IMD_TEST_MYSQL_DSN=x", "IMD_REQUIRE_SERVICES=1", "IMD_MYSQL_PORT=1",
		"IMD_REDIS_PORT=2", "IMD_S3_PORT=3", "IMD_STATE_DIR=/tmp", "IMD_NGINX_MODE=tls", "IMD_DOMAIN=example.com",
		"IMD_CLUSTER_MASTERS=6",
	})
	if err != nil {
		t.Fatal(err)
	}
}
