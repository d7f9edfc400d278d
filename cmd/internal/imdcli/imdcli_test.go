package imdcli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imdhq/imd/adapters/config"
)

// configYAML is the least a server can run on: a prod tenant on one MySQL, with its secrets.
const configYAML = `{env: prod, admin_key: admin-key-123, token_secret: 0123456789abcdef0123, mysql: {dsn: "x:y@tcp(127.0.0.1:3306)/"}, tenants: [{name: default}]}`

func TestRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "imd.yaml")
	if err := os.WriteFile(file, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	status := http.StatusOK
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	defer site.Close()

	tests := []struct {
		name    string
		args    []string
		env     []string
		down    bool // the probed site answers 503
		served  bool
		out     string // what stdout holds (a substring)
		wantErr string // a substring of the error; "" for none
	}{
		{name: "serve the file given", args: []string{"--config", file}, served: true},
		{name: "serve the file of IMD_CONFIG", env: []string{"IMD_CONFIG=" + file}, served: true},
		{name: "variables override the file", args: []string{"--config", file}, env: []string{"IMD_NODE_ID=5000"}, wantErr: "node_id"},
		{name: "an invalid file is not served", args: []string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, wantErr: "read config"},
		{name: "check prints the configuration, secrets masked", args: []string{"check", "--config", file}, out: "env: prod"},
		{name: "check refuses a misspelt variable", args: []string{"check", "--config", file}, env: []string{"IMD_TCP_ADR=x"}, wantErr: "IMD_TCP_ADR"},
		{name: "version", args: []string{"--version"}, out: "imd "},
		{name: "probe of a ready site", args: []string{"probe", site.URL}},
		{name: "probe of a site not ready", args: []string{"probe", site.URL}, down: true, wantErr: "503"},
		{name: "probe without a URL", args: []string{"probe"}, wantErr: "usage: imd probe URL"},
		{name: "an unknown flag", args: []string{"--bogus"}, wantErr: "bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status = http.StatusOK
			if tt.down {
				status = http.StatusServiceUnavailable
			}
			var out, errs bytes.Buffer
			served := false
			err := Run(tt.args, tt.env, Streams{Out: &out, Err: &errs}, "", func(cfg config.Config) error {
				served = cfg.Env == "prod"
				return nil
			})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one naming %q", err, tt.wantErr)
			}
			if served != tt.served {
				t.Errorf("served %v, want %v", served, tt.served)
			}
			if !strings.Contains(out.String(), tt.out) {
				t.Errorf("stdout %q, want it to hold %q", out.String(), tt.out)
			}
			if strings.Contains(out.String(), "admin-key-123") {
				t.Errorf("stdout shows the admin key: %q", out.String())
			}
		})
	}
}
