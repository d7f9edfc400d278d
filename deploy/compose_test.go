// Package deploy holds the deployment files; its test checks deploy/compose.yaml as far as
// that is possible without a Docker engine.
package deploy

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/goccy/go-yaml"

	"github.com/imdhq/imd/adapters/config"
)

// loadCompose loads compose.yaml with every profile, as `docker compose --profile monitoring`
// would, with the variables compose.env.example asks for.
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"},
		cli.WithWorkingDirectory("."),
		cli.WithEnv([]string{"IMD_DOMAIN=example.com"}),
		cli.WithProfiles([]string{"monitoring"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(t.Context())
	if err != nil {
		t.Fatalf("load compose.yaml: %v", err)
	}
	return p
}

// imdConfig is the config the imd container runs with (its secrets come from files, so dummy
// values stand in for them here).
func imdConfig(t *testing.T) config.Config {
	t.Helper()
	cfg, err := config.Load(filepath.Join("config", "imd.compose.yaml"), []string{
		"IMD_ADMIN_KEY=compose-test-admin-key", "IMD_TOKEN_SECRET=compose-test-token-secret",
		"IMD_MYSQL_DSN=imd:x@tcp(mysql:3306)/?parseTime=true",
	})
	if err != nil {
		t.Fatalf("load imd.compose.yaml: %v", err)
	}
	return cfg
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, ok := p.Services[name]
	if !ok {
		t.Fatalf("compose.yaml has no service %s", name)
	}
	return s
}

func TestComposeServicesAndHealthchecks(t *testing.T) {
	p := loadCompose(t)
	want := []string{"nginx", "imd", "mysql", "redis", "prometheus", "grafana"}
	for _, name := range want {
		s := service(t, p, name)
		hc := s.HealthCheck
		if hc == nil || hc.Disable || len(hc.Test) == 0 || hc.Test[0] == "NONE" {
			t.Errorf("%s has no healthcheck", name)
		}
		if s.Restart != "unless-stopped" {
			t.Errorf("%s restart %q, want unless-stopped", name, s.Restart)
		}
	}
	for name := range p.Services {
		if !slices.Contains(want, name) {
			t.Errorf("unexpected service %s: add it to this test", name)
		}
	}
	for _, name := range []string{"prometheus", "grafana"} {
		if !slices.Equal(service(t, p, name).Profiles, []string{"monitoring"}) {
			t.Errorf("%s is not in the monitoring profile only", name)
		}
	}
	// imd waits for healthy storage: a start without it fails its provisioning.
	deps := service(t, p, "imd").DependsOn
	for _, name := range []string{"mysql", "redis"} {
		if deps[name].Condition != types.ServiceConditionHealthy {
			t.Errorf("imd does not wait for %s to be healthy", name)
		}
	}
}

// TestComposeOnlyPublishes443 allows 443 on every interface and the monitoring UIs on the
// host's loopback only.
func TestComposeOnlyPublishes443(t *testing.T) {
	p := loadCompose(t)
	for name, s := range p.Services {
		for _, port := range s.Ports {
			switch {
			case port.Published == "443" && port.Target == 443 && name == "nginx":
			case port.HostIP == "127.0.0.1" && (name == "prometheus" || name == "grafana"):
			default:
				t.Errorf("%s publishes %s:%s → %d", name, port.HostIP, port.Published, port.Target)
			}
		}
	}
}

// TestComposeKeepsEveryDirectoryImdWrites: imd's root is read-only, and each directory its
// config makes it write is a named volume, so the data survives a recreate.
func TestComposeKeepsEveryDirectoryImdWrites(t *testing.T) {
	p := loadCompose(t)
	imd := service(t, p, "imd")
	if !imd.ReadOnly {
		t.Error("imd's root filesystem is not read-only")
	}
	cfg := imdConfig(t)
	dirs := []string{cfg.Uploads.Dir, cfg.Archive.Dir, cfg.Search.Dir}
	if cfg.Archive.Store != "fs" {
		dirs = dirs[:1] // an S3 archive writes no local directory
	}
	for _, dir := range dirs {
		if strings.HasPrefix(dir, os.TempDir()) {
			t.Errorf("imd.compose.yaml leaves %s in the temporary directory", dir)
		}
		i := slices.IndexFunc(imd.Volumes, func(v types.ServiceVolumeConfig) bool { return v.Target == dir })
		if i < 0 {
			t.Errorf("imd writes %s, which no volume keeps", dir)
			continue
		}
		v := imd.Volumes[i]
		if v.Type != types.VolumeTypeVolume || v.ReadOnly {
			t.Errorf("%s is mounted as %s (read only %v), want a writable named volume", dir, v.Type, v.ReadOnly)
		}
		if _, ok := p.Volumes[v.Source]; !ok {
			t.Errorf("volume %s of %s is not declared", v.Source, dir)
		}
	}
	if !slices.ContainsFunc(imd.Tmpfs, func(s string) bool { return strings.HasPrefix(s, "/tmp") }) {
		t.Error("imd has no writable /tmp")
	}
	for _, name := range []string{"mysql", "redis", "prometheus", "grafana"} {
		if !slices.ContainsFunc(service(t, p, name).Volumes, func(v types.ServiceVolumeConfig) bool {
			return v.Type == types.VolumeTypeVolume && !v.ReadOnly
		}) {
			t.Errorf("%s keeps its data in no named volume", name)
		}
	}
}

// TestComposeSecretsAreFiles: secrets reach imd and MySQL as compose secrets named by *_FILE
// variables, never as values in the environment.
func TestComposeSecretsAreFiles(t *testing.T) {
	p := loadCompose(t)
	files := map[string]map[string]string{
		"imd":     {"IMD_ADMIN_KEY_FILE": "imd_admin_key", "IMD_TOKEN_SECRET_FILE": "imd_token_secret", "IMD_MYSQL_DSN_FILE": "imd_mysql_dsn"},
		"mysql":   {"MYSQL_ROOT_PASSWORD_FILE": "mysql_root_password", "MYSQL_PASSWORD_FILE": "mysql_password"},
		"grafana": {"GF_SECURITY_ADMIN_PASSWORD__FILE": "grafana_admin_password"},
	}
	for name, vars := range files {
		s := service(t, p, name)
		for key, secret := range vars {
			v := s.Environment[key]
			if v == nil || *v != "/run/secrets/"+secret {
				t.Errorf("%s: %s = %v, want /run/secrets/%s", name, key, v, secret)
			}
			if !slices.ContainsFunc(s.Secrets, func(c types.ServiceSecretConfig) bool { return c.Source == secret }) {
				t.Errorf("%s does not mount secret %s", name, secret)
			}
			if _, ok := p.Secrets[secret]; !ok {
				t.Errorf("secret %s is not declared", secret)
			}
			if plain := strings.TrimSuffix(strings.TrimSuffix(key, "_FILE"), "_"); s.Environment[plain] != nil {
				t.Errorf("%s: %s is also set as a plain value", name, plain)
			}
		}
	}
}

// TestComposeServesAdminApart: the production config serves the admin API on a loopback
// listener of its own, never the one Nginx proxies clients to (issue 33).
func TestComposeServesAdminApart(t *testing.T) {
	p := loadCompose(t)
	cfg := imdConfig(t)
	host, _, err := net.SplitHostPort(cfg.HTTP.AdminAddr)
	if err != nil {
		t.Fatalf("http.admin_addr %q: %v", cfg.HTTP.AdminAddr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("http.admin_addr %q is not loopback", cfg.HTTP.AdminAddr)
	}
	proxied := service(t, p, "nginx").Environment["IMD_HTTP"]
	if proxied == nil || *proxied != cfg.HTTP.Addr || cfg.HTTP.AdminAddr == cfg.HTTP.Addr {
		t.Errorf("nginx proxies to %v, imd serves clients on %s and the admin API on %s", proxied, cfg.HTTP.Addr, cfg.HTTP.AdminAddr)
	}
}

// TestComposeHasNoDevSignIn: the production config never serves the development sign-in,
// which mints a token for any user id without a key (issue 31).
func TestComposeHasNoDevSignIn(t *testing.T) {
	if imdConfig(t).HTTP.DevSignIn {
		t.Error("imd.compose.yaml switches http.dev_signin on")
	}
}

// TestComposeScrapesImdPrivately: Prometheus reaches imd's metrics-only listener over an
// internal network, not through the public Nginx.
func TestComposeScrapesImdPrivately(t *testing.T) {
	p := loadCompose(t)
	cfg := imdConfig(t)
	_, port, err := net.SplitHostPort(cfg.HTTP.MetricsAddr)
	if err != nil {
		t.Fatalf("http.metrics_addr %q: %v", cfg.HTTP.MetricsAddr, err)
	}
	if service(t, p, "imd").NetworkMode != "service:nginx" {
		t.Fatal("imd no longer shares nginx's network namespace: fix the scrape target")
	}
	if !p.Networks["monitoring"].Internal {
		t.Error("the monitoring network is not internal")
	}
	for _, name := range []string{"nginx", "prometheus"} {
		if _, ok := service(t, p, name).Networks["monitoring"]; !ok {
			t.Errorf("%s is not on the monitoring network", name)
		}
	}
	raw, err := os.ReadFile(filepath.Join("prometheus", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &prom); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(prom.ScrapeConfigs, func(c struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	}) bool {
		return c.JobName == "imd"
	})
	if i < 0 || len(prom.ScrapeConfigs[i].StaticConfigs) == 0 ||
		!slices.Equal(prom.ScrapeConfigs[i].StaticConfigs[0].Targets, []string{"nginx:" + port}) {
		t.Fatalf("prometheus.yml does not scrape job imd at nginx:%s", port)
	}
	if !slices.Contains(prom.RuleFiles, "alerts.yaml") {
		t.Error("prometheus.yml does not load alerts.yaml")
	}
	mounts := service(t, p, "prometheus").Volumes
	for _, f := range []string{"prometheus.yml", "alerts.yaml"} {
		if !slices.ContainsFunc(mounts, func(v types.ServiceVolumeConfig) bool { return v.Target == "/etc/prometheus/"+f }) {
			t.Errorf("prometheus does not mount %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join("grafana", "dashboards", "imd.json")); err != nil {
		t.Errorf("no provisioned imd dashboard: %v", err)
	}
}
