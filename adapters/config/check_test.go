package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEffectiveMasksSecrets: the printed configuration carries every key but no secret, and
// loads back (with the secrets given again) to the same configuration.
func TestEffectiveMasksSecrets(t *testing.T) {
	secrets := []string{
		"IMD_MYSQL_DSN=imd:hunter2-db@tcp(db:3306)/?parseTime=true", "IMD_REDIS_PASSWORD=hunter2-redis",
		"IMD_ARCHIVE_S3_SECRET_KEY=hunter2-s3", "IMD_UPLOADS_SECRET=hunter2-urls",
		"IMD_TENANTS=default:imd_default,far:imd_far:imd:hunter2-far@tcp(db2:3306)/?parseTime=true",
	}
	cfg, err := Load(writeConfig(t, validYAML), secrets)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.Effective()
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, secret := range []string{"hunter2", "admin-key-123", "0123456789abcdef0123"} {
		if strings.Contains(text, secret) {
			t.Errorf("printed config shows secret %q:\n%s", secret, text)
		}
	}
	for _, want := range []string{"dsn: imd:********@tcp(db:3306)/", `password: "********"`, "deliver:", "take_timeout: 5s", "- name: default", "dsn: imd:********@tcp(db2:3306)/"} {
		if !strings.Contains(text, want) {
			t.Errorf("printed config lacks %q:\n%s", want, text)
		}
	}
	// What check prints is a config file imd reads back: with the secrets given again, the
	// same configuration.
	path := filepath.Join(t.TempDir(), "effective.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path, append(secrets, "IMD_ADMIN_KEY="+cfg.AdminKey, "IMD_TOKEN_SECRET="+cfg.TokenSecret))
	if err != nil {
		t.Fatalf("printed config does not load back: %v\n%s", err, text)
	}
	again, err := back.Effective()
	if err != nil {
		t.Fatal(err)
	}
	// Compared printed: an empty list prints as [] and loads back as an empty, not nil, slice.
	if string(again) != text || back.AdminKey != cfg.AdminKey || back.Redis.Password != cfg.Redis.Password {
		t.Fatalf("loaded back differently:\n%s\nwant\n%s", again, text)
	}
}
