package e2e

// Seed 003 §2.4 and §23 item 4: the client heartbeat (30 s), imd's idle timeout (120 s) and
// Nginx's proxy timeout (3600 s) keep a long connection alive only in that order. Each is read
// where it is set: the heartbeat from the Go client and the JavaScript SDK, the idle timeout
// from imd's defaults and every config file of deploy/config, the proxy timeouts from the Nginx
// config that deploy/local/nginx.sh renders from deploy/nginx/imd.conf.template, in both modes.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/clients/go/client"
)

func TestTimeoutsLineUpHeartbeatIdleProxy(t *testing.T) {
	heartbeats := map[string]time.Duration{
		"Go client DefaultHeartbeat": client.DefaultHeartbeat,
		"JavaScript SDK heartbeatMs": jsHeartbeat(t),
	}
	idles := imdIdleTimeouts(t)
	for listener, byConfig := range idles {
		for cfgName, idle := range byConfig {
			for hbName, hb := range heartbeats {
				if hb >= idle {
					t.Errorf("%s %v is not below %s %s idle timeout %v: a quiet live client would be closed", hbName, hb, cfgName, listener, idle)
				}
			}
		}
	}
	for _, mode := range []string{"off", "native"} {
		ngx := parseNginxConf(t, renderNginx(t, mode))
		proxies := map[string]map[string]time.Duration{
			"tcp":       {"stream proxy_timeout": streamProxyTimeout(t, ngx)},
			"websocket": wsProxyTimeouts(t, ngx),
		}
		for listener, byConfig := range idles {
			for cfgName, idle := range byConfig {
				for proxyName, proxy := range proxies[listener] {
					if idle >= proxy {
						t.Errorf("Nginx mode %s: %s %s idle timeout %v is not below %s %v: Nginx would cut a live connection",
							mode, cfgName, listener, idle, proxyName, proxy)
					}
				}
			}
		}
	}
}

// jsHeartbeat reads the SDK's default heartbeatMs from clients/js/imd.js.
func jsHeartbeat(t *testing.T) time.Duration {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot(), "clients", "js", "imd.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`heartbeatMs:\s*([0-9_]+)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("clients/js/imd.js: no default heartbeatMs")
	}
	ms, err := strconv.Atoi(strings.ReplaceAll(string(m[1]), "_", ""))
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ms) * time.Millisecond
}

// imdIdleTimeouts are the TCP and WebSocket idle timeouts of imd's defaults and of each file
// of deploy/config, by listener and then by source.
func imdIdleTimeouts(t *testing.T) map[string]map[string]time.Duration {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(), "deploy", "config", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no config files in deploy/config (%v)", err)
	}
	def := config.Default()
	out := map[string]map[string]time.Duration{
		"tcp":       {"defaults": def.TCP.IdleTimeout},
		"websocket": {"defaults": def.HTTP.WebSocket.IdleTimeout},
	}
	for _, path := range files {
		name := filepath.Base(path)
		// What a file leaves to the environment (secrets, tenants), as deploy/compose_test.go.
		cfg, err := config.Load(path, []string{
			"IMD_ADMIN_KEY=timeouts-test-admin-key", "IMD_TOKEN_SECRET=timeouts-test-token-secret",
			"IMD_MYSQL_DSN=imd:x@tcp(mysql:3306)/?parseTime=true", "IMD_TENANTS=acme:imd_acme",
		})
		if err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
		out["tcp"][name] = cfg.TCP.IdleTimeout
		out["websocket"][name] = cfg.HTTP.WebSocket.IdleTimeout
	}
	return out
}

// renderNginx is the config deploy/local/nginx.sh renders for mode.
func renderNginx(t *testing.T, mode string) string {
	t.Helper()
	if _, err := exec.LookPath("envsubst"); err != nil && os.Getenv("IMD_REQUIRE_SERVICES") != "1" {
		t.Skip("envsubst not installed: apt-get install gettext-base (deploy/local/nginx.sh render does as root)")
	}
	out, err := runNginxScript([]string{"IMD_STATE_DIR=" + t.TempDir(), "IMD_NGINX_MODE=" + mode}, "render")
	if err != nil {
		t.Fatalf("deploy/local/nginx.sh render (mode %s): %v\n%s", mode, err, out)
	}
	return out
}

// nginxBlock is a directive of an Nginx config with its arguments and, for a block, what it
// holds.
type nginxBlock struct {
	name     string
	args     []string
	children []*nginxBlock
}

// parseNginxConf reads an Nginx config into its directive tree. It knows what the template
// uses: comments, words, quoted strings without escapes, and the `;`, `{` and `}` that end
// directives and blocks.
func parseNginxConf(t *testing.T, conf string) *nginxBlock {
	t.Helper()
	root := &nginxBlock{name: "main"}
	stack := []*nginxBlock{root}
	var words []string
	for _, line := range strings.Split(conf, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		for _, tok := range regexp.MustCompile(`"[^"]*"|[;{}]|[^\s;{}]+`).FindAllString(line, -1) {
			top := stack[len(stack)-1]
			switch tok {
			case ";", "{":
				if len(words) == 0 {
					t.Fatalf("nginx config: %q without a directive", tok)
				}
				d := &nginxBlock{name: words[0], args: words[1:]}
				top.children = append(top.children, d)
				if tok == "{" {
					stack = append(stack, d)
				}
				words = nil
			case "}":
				if len(stack) == 1 || len(words) > 0 {
					t.Fatal("nginx config: unbalanced }")
				}
				stack = stack[:len(stack)-1]
			default:
				words = append(words, tok)
			}
		}
	}
	if len(stack) != 1 || len(words) > 0 {
		t.Fatal("nginx config: unterminated block or directive")
	}
	return root
}

func (b *nginxBlock) all(name string) []*nginxBlock {
	var out []*nginxBlock
	for _, c := range b.children {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

// duration is the value of directive name in b, or inherited when b does not set it.
func (b *nginxBlock) duration(t *testing.T, name string, inherited time.Duration) time.Duration {
	t.Helper()
	ds := b.all(name)
	if len(ds) == 0 {
		return inherited
	}
	if len(ds[0].args) != 1 {
		t.Fatalf("nginx config: %s %v", name, ds[0].args)
	}
	return nginxDuration(t, ds[0].args[0])
}

// nginxDuration parses Nginx's time syntax: a number with an optional unit, seconds by default.
func nginxDuration(t *testing.T, v string) time.Duration {
	t.Helper()
	units := map[string]time.Duration{"": time.Second, "ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	m := regexp.MustCompile(`^([0-9]+)(ms|s|m|h|d|)$`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("nginx config: time %q", v)
	}
	n, _ := strconv.Atoi(m[1])
	return time.Duration(n) * units[m[2]]
}

func one(t *testing.T, b *nginxBlock, name string) *nginxBlock {
	t.Helper()
	bs := b.all(name)
	if len(bs) != 1 {
		t.Fatalf("nginx config: %d %s blocks in %s, want 1", len(bs), name, b.name)
	}
	return bs[0]
}

// streamProxyTimeout is the shortest proxy_timeout of the stream servers that proxy (every IM
// connection passes the public server and, in mode off, the TLS hop): 10 minutes is Nginx's
// default when the stream block does not set one.
func streamProxyTimeout(t *testing.T, ngx *nginxBlock) time.Duration {
	t.Helper()
	stream := one(t, ngx, "stream")
	inherited := stream.duration(t, "proxy_timeout", 10*time.Minute)
	shortest := time.Duration(0)
	for _, srv := range stream.all("server") {
		if len(srv.all("proxy_pass")) == 0 {
			continue
		}
		if d := srv.duration(t, "proxy_timeout", inherited); shortest == 0 || d < shortest {
			shortest = d
		}
	}
	if shortest == 0 {
		t.Fatal("nginx config: no stream server proxies")
	}
	return shortest
}

// wsProxyTimeouts are the read and send timeouts of the http location that proxies /ws (60 s
// each when neither the location nor its server nor http sets them).
func wsProxyTimeouts(t *testing.T, ngx *nginxBlock) map[string]time.Duration {
	t.Helper()
	http := one(t, ngx, "http")
	out := map[string]time.Duration{}
	for _, srv := range http.all("server") {
		for _, loc := range srv.all("location") {
			if strings.Join(loc.args, " ") != "= /ws" {
				continue
			}
			for _, name := range []string{"proxy_read_timeout", "proxy_send_timeout"} {
				inherited := srv.duration(t, name, http.duration(t, name, time.Minute))
				out[fmt.Sprintf("/ws %s", name)] = loc.duration(t, name, inherited)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("nginx config: no location = /ws")
	}
	return out
}
