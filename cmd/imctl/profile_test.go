package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const profiles = `default: dev
profiles:
  dev: {http: "%s", admin-key: dev-key, tenant: acme}
  prod: {http: "%s", admin-key: prod-key, tenant: acme, mysql-dsn: "imd:pw@tcp(127.0.0.1:1)/"}
`

// TestProfiles: a setting comes from the flag, else IMCTL_, else the profile (the file's
// default unless --profile or IMCTL_PROFILE names one), and the file sits in the user's
// config directory unless --config says otherwise.
func TestProfiles(t *testing.T) {
	f := newAdminFake(t, map[string]string{"POST " + tenantPath + "/users": `{"user_id":7}`})
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "imctl"), 0o700); err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(profiles, "%s", f.srv.URL)
	if err := os.WriteFile(filepath.Join(dir, "imctl", "config.yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(other, []byte(strings.Replace(body, "default: dev", "default: prod", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantAuth string
	}{
		{"the file's default profile", nil, nil, "Bearer dev-key"},
		{"--profile", nil, []string{"--profile", "prod"}, "Bearer prod-key"},
		{"IMCTL_PROFILE", map[string]string{"IMCTL_PROFILE": "prod"}, nil, "Bearer prod-key"},
		{"env beats the profile", map[string]string{"IMCTL_ADMIN_KEY": "env-key"}, nil, "Bearer env-key"},
		{"the flag beats env", map[string]string{"IMCTL_ADMIN_KEY": "env-key"}, []string{"--admin-key", "flag-key"}, "Bearer flag-key"},
		{"--config", nil, []string{"--config", other}, "Bearer prod-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cli{env: tt.env, configDir: dir}
			if _, _, err := c.run(append(tt.args, "user", "create", "7")...); err != nil {
				t.Fatal(err)
			}
			if f.auth != tt.wantAuth {
				t.Fatalf("authorization %q, want %q", f.auth, tt.wantAuth)
			}
		})
	}
}

func TestProfileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("profiles:\n  p: {htp: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"misspelt setting", []string{"--config", bad, "--profile", "p"}, `unknown setting "htp"`},
		{"no such profile", []string{"--config", bad, "--profile", "q"}, `no profile "q"`},
		{"missing explicit file", []string{"--config", filepath.Join(dir, "none.yaml")}, "none.yaml"},
		{"profile without a file", []string{"--profile", "prod"}, `profile "prod": no config file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := cli{configDir: t.TempDir()}.run(append(tt.args, "user", "create", "7")...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestMigrateGenTakesTheProfilesDSN: mysql-dsn of the profile stands in for --dsn.
func TestMigrateGenTakesTheProfilesDSN(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("profiles:\n  p: {mysql-dsn: \"imd:pw@tcp(127.0.0.1:1)/?timeout=1s\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := cli{}.run("--config", path, "--profile", "p", "migrate", "gen", "--rows", "1")
	if err == nil || strings.Contains(err.Error(), "--dsn is required") {
		t.Fatalf("err = %v, want a connection error to the profile's server", err)
	}
}
