package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/cmd/imctl/adminapi"
	"github.com/imdhq/imd/cmd/imctl/bench"
	"github.com/imdhq/imd/cmd/imctl/bench/report"
)

// deps are what the commands take from the process, so tests can supply
// their own.
type deps struct {
	lookupEnv func(string) (string, bool)
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	terminal  bool // stderr is a terminal: redraw progress in place
	runBench  func(context.Context, bench.Config) (report.Report, error)
	// userConfigDir locates the default config file (os.UserConfigDir); nil: none.
	userConfigDir func() (string, error)
	version       string // what --version prints after "imctl"
}

// globals are the connection settings every command shares.
type globals struct {
	httpURL  string
	adminKey string
	tenant   string
	tcpAddr  string
	tls      bool
	sni      string
	insecure bool
	proxy    int
	config   string // the config file of profiles
	profile  string
	// settings answers what the flags do not hold (mysql-dsn), once resolve ran.
	settings settings
}

// envPrefix names the environment fallbacks: --admin-key ← IMCTL_ADMIN_KEY.
const envPrefix = "IMCTL_"

func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func (g *globals) bind(fs *pflag.FlagSet) {
	fs.StringVar(&g.httpURL, "http", "http://127.0.0.1:8080", "base URL of imd's HTTP listener (admin API) ["+envName("http")+"]")
	fs.StringVar(&g.adminKey, "admin-key", "dev-admin-key", "admin API key ["+envName("admin-key")+"]")
	fs.StringVar(&g.tenant, "tenant", "default", "tenant ["+envName("tenant")+"]")
	fs.StringVar(&g.tcpAddr, "tcp", "127.0.0.1:9000", "frame listener, host:port or unix:/path; or the WebSocket URL ws(s)://host/ws ["+envName("tcp")+"]")
	fs.BoolVar(&g.tls, "tls", false, "speak TLS on the frame connection ["+envName("tls")+"]")
	fs.StringVar(&g.sni, "sni", "", "TLS server name (default: the --tcp host) ["+envName("sni")+"]")
	fs.BoolVar(&g.insecure, "insecure", false, "skip TLS certificate checks, frames and HTTPS alike ["+envName("insecure")+"]")
	fs.IntVar(&g.proxy, "proxy", 0, "send a PROXY header first, as Nginx does: 0 none, 1 v1, 2 v2 ["+envName("proxy")+"]")
	fs.StringVar(&g.config, "config", "", "config file of profiles (default ~/.config/imctl/config.yaml) ["+envName("config")+"]")
	fs.StringVar(&g.profile, "profile", "", "profile of the config file (default: the file's default) ["+envName("profile")+"]")
}

// resolve fills the flags of fs (the ones bind defined) that the command line did not set:
// from the IMCTL_ variable, else from the profile of the config file; then checks the result.
func (g *globals) resolve(fs *pflag.FlagSet, d deps) error {
	for _, name := range []string{"config", "profile"} {
		if f := fs.Lookup(name); !f.Changed {
			if v, ok := d.lookupEnv(envName(name)); ok {
				_ = fs.Set(name, v)
			}
		}
	}
	path, explicit := g.config, g.config != ""
	if !explicit {
		path = defaultConfigPath(d.userConfigDir)
	}
	profile, err := loadProfile(path, g.profile, explicit, fs)
	if err != nil {
		return err
	}
	g.settings = settings{lookupEnv: d.lookupEnv, profile: profile, source: path}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" || f.Name == "profile" {
			return
		}
		if v, from, ok := g.settings.lookup(f.Name); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", from, v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if g.proxy < 0 || g.proxy > 2 {
		return fmt.Errorf("--proxy must be 0, 1 or 2, not %d", g.proxy)
	}
	return nil
}

func (g *globals) admin() *adminapi.Client {
	var hc *http.Client
	if g.insecure {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		tr.MaxIdleConnsPerHost = 64
		hc = &http.Client{Timeout: 30 * time.Second, Transport: tr}
	}
	return adminapi.New(g.httpURL, g.adminKey, g.tenant, hc)
}

func (g *globals) dialOptions() client.Options {
	o := client.Options{Addr: g.tcpAddr, ProxyHeader: g.proxy}
	if g.tls || strings.HasPrefix(g.tcpAddr, "wss://") {
		o.TLS = &tls.Config{ServerName: g.sni, InsecureSkipVerify: g.insecure, MinVersion: tls.VersionTLS12}
	}
	return o
}

func newRootCmd(d deps) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "imctl",
		Short: "Admin and client CLI of imd, and its load generator",
		Long: `imctl talks to a running imd: the admin HTTP API (tenants, users, tokens,
friendships, blocks, groups, mutes, token revocation, statistics, shards, routes,
messages), the frame protocol (an interactive chat), and the standard benchmark workloads
W1–W5.

Every global flag falls back to an IMCTL_* environment variable when not given, and then
to the profile of the config file (--config, default ~/.config/imctl/config.yaml; --profile,
default the file's "default"), whose keys are the flags' names and mysql-dsn:

  default: prod
  profiles:
    prod: {http: "https://api.example.com", admin-key: "...", tenant: acme, mysql-dsn: "imd:...@tcp(db:3306)/"}
    dev:  {http: "http://127.0.0.1:8080", admin-key: dev-admin-key}`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       d.version,
	}
	root.SetVersionTemplate("imctl {{.Version}}\n")
	g.bind(root.PersistentFlags())
	// Only the root has this hook: cobra runs the nearest one alone.
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		return g.resolve(root.PersistentFlags(), d)
	}
	root.SetIn(d.stdin)
	root.SetOut(d.stdout)
	root.SetErr(d.stderr)
	root.AddCommand(
		newUserCmd(g), newTokenCmd(g), newFriendCmd(g), newGroupCmd(g),
		newShardsCmd(g), newRouteCmd(g), newMessagesCmd(g), newMessageCmd(g),
		newTenantsCmd(g), newBlocksCmd(g), newMuteCmd(g), newRevokeCmd(g), newStatsCmd(g),
		newChatCmd(g),
		newArchiveCmd(g), newRestoreCmd(g), newRetentionCmd(g), newSearchCmd(g),
		newBenchCmd(g, d),
		newMigrateCmd(g, d),
	)
	return root
}
