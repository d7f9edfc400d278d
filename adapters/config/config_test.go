package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadDevConfig(t *testing.T) {
	cfg, err := Load(filepath.Join("..", "..", "deploy", "config", "imd.dev.yaml"), nil)
	if err != nil {
		t.Fatalf("dev config must load: %v", err)
	}
	if cfg.Env != "dev" || len(cfg.Tenants) == 0 || cfg.Tenants[0].Name != "default" {
		t.Fatalf("unexpected dev config: %+v", cfg)
	}
}

func TestLoadBenchConfig(t *testing.T) {
	// deploy/local/bench.sh names a fresh tenant per run.
	cfg, err := Load(filepath.Join("..", "..", "deploy", "config", "imd.bench.yaml"), []string{"IMD_TENANTS=bench_1:imd_bench_1"})
	if err != nil {
		t.Fatalf("bench config must load: %v", err)
	}
	r := cfg.RateLimit
	if cfg.Env != "prod" || cfg.Log.Level != "warn" || r.MessagePerSecond != 0 || r.AuthPerSecond != 0 || r.PerIP.MessagePerSecond != 0 ||
		r.PerIP.AuthPerSecond != 0 || r.SyncMessagesPerMinute != 0 || r.HistoryPerMinute != 0 {
		t.Fatalf("bench config: env %q, log %q, rate limits %+v; want prod, warn, none", cfg.Env, cfg.Log.Level, r)
	}
}

func TestEnvOverrides(t *testing.T) {
	path := writeConfig(t, validYAML)
	cfg, err := Load(path, []string{
		"IMD_MYSQL_DSN=u:p@tcp(h:1)/", "IMD_TCP_ADDR=unix:/tmp/x.sock", "IMD_TCP_PROXY_PROTOCOL=true",
		"IMD_DELIVER_TAKE_TIMEOUT=2s", "IMD_NODE_ID=7", "IMD_TENANTS=a:db_a,b:db_b:imd:pw@tcp(10.0.0.2:3306)/?parseTime=true", "PATH=/bin",
		"IMD_MESSAGE_RECALL_WINDOW=5m", "IMD_RATE_LIMIT_PER_IP_AUTH_PER_SECOND=9", "IMD_TCP_PUSH_ACK_TIMEOUT=45s",
		"IMD_SHARD_SEQ_HOLE_SWEEP_INTERVAL=200ms", "IMD_SHUTDOWN_DRAIN_WINDOW=2s", "IMD_PUSH_ACK_WAIT=1500ms",
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"dsn", cfg.MySQL.DSN, "u:p@tcp(h:1)/"},
		{"tcp addr", cfg.TCP.Addr, "unix:/tmp/x.sock"},
		{"proxy", cfg.TCP.ProxyProtocol, true},
		{"duration", cfg.Deliver.TakeTimeout, 2 * time.Second},
		{"int", cfg.NodeID, 7},
		{"tenants", len(cfg.Tenants), 2},
		{"tenant db", cfg.Tenants[1].DatabaseName(), "db_b"},
		{"tenant server", cfg.Tenants[1].DSN, "imd:pw@tcp(10.0.0.2:3306)/?parseTime=true"},
		{"tenant on the default server", cfg.Tenants[0].DSN, ""},
		{"recall window", cfg.Message.RecallWindow, 5 * time.Minute},
		{"nested per-IP rate limit", cfg.RateLimit.PerIP.AuthPerSecond, 9},
		{"push ack timeout", cfg.TCP.PushAckTimeout, 45 * time.Second},
		{"handshake timeout default", cfg.TCP.HandshakeTimeout, 10 * time.Second},
		{"proxy timeout default", cfg.TCP.ProxyTimeout, 3 * time.Second},
		{"seq hole sweep interval", cfg.Shard.SeqHoleSweepInterval, 200 * time.Millisecond},
		{"seq hole age default", cfg.Shard.SeqHoleAfter, 10 * time.Minute},
		{"drain window", cfg.Shutdown.DrainWindow, 2 * time.Second},
		{"unready grace default", cfg.Shutdown.UnreadyGrace, 5 * time.Second},
		{"push ack wait", cfg.Push.AckWait, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	empty := writeConfig(t, "")
	tests := []struct {
		name    string
		env     []string
		wantErr string
	}{
		{"bad tls mode", []string{"IMD_TCP_TLS=maybe"}, "tcp.tls"},
		{"native without cert", []string{"IMD_TCP_TLS=native"}, "cert_file"},
		{"bad tenant", []string{"IMD_TENANTS=Bad-Name:x"}, "tenant name"},
		{"bad tenant server", []string{"IMD_TENANTS=far:imd_far:no-slash-here"}, "dsn does not parse"},
		{"short admin key", []string{"IMD_ADMIN_KEY=x"}, "admin_key"},
		{"node id", []string{"IMD_NODE_ID=5000"}, "node_id"},
		{"bad duration", []string{"IMD_DELIVER_TAKE_TIMEOUT=soon"}, "IMD_DELIVER_TAKE_TIMEOUT"},
		{"no heal lookback", []string{"IMD_DELIVER_HEAL_LOOKBACK=0s"}, "heal_lookback"},
		{"heal past the markers' life", []string{"IMD_DELIVER_DONE_TTL=2m", "IMD_DELIVER_HEAL_LOOKBACK=1m", "IMD_DELIVER_REPAIR_INTERVAL=10s", "IMD_DELIVER_REPAIR_SETTLE=41s"}, "at most done_ttl"},
		{"no pins", []string{"IMD_REACTIONS_PINS_PER_CONVERSATION=0"}, "reactions.per_message, reactions.per_user and reactions.pins_per_conversation"},
		{"negative reactions per user", []string{"IMD_REACTIONS_PER_USER=-1"}, "reactions.per_message"},
		{"negative push ack wait", []string{"IMD_PUSH_ACK_WAIT=-1s"}, "push.ack_wait"},
		{"no recall window", []string{"IMD_MESSAGE_RECALL_WINDOW=0s"}, "recall_window"},
		{"negative rate limit", []string{"IMD_RATE_LIMIT_PER_IP_MESSAGE_PER_SECOND=-1"}, "rate_limit"},
		{"no handshake timeout", []string{"IMD_TCP_HANDSHAKE_TIMEOUT=0s"}, "handshake_timeout"},
		{"no proxy timeout", []string{"IMD_TCP_PROXY_TIMEOUT=0s"}, "proxy_timeout"},
		{"negative unready grace", []string{"IMD_SHUTDOWN_UNREADY_GRACE=-1s"}, "shutdown.unready_grace"},
		{"negative drain window", []string{"IMD_SHUTDOWN_DRAIN_WINDOW=-1s"}, "shutdown.drain_window"},
		{"no shutdown timeout", []string{"IMD_SHUTDOWN_TIMEOUT=0s"}, "shutdown.timeout must be positive"},
		{"grace and drain fill the timeout", []string{"IMD_SHUTDOWN_TIMEOUT=10s", "IMD_SHUTDOWN_UNREADY_GRACE=3s", "IMD_SHUTDOWN_DRAIN_WINDOW=3s"}, "must leave 5s of shutdown.timeout"},
		{"no seq hole sweep interval", []string{"IMD_SHARD_SEQ_HOLE_SWEEP_INTERVAL=0s"}, "seq_hole_sweep_interval"},
		{"negative seq hole age", []string{"IMD_SHARD_SEQ_HOLE_AFTER=-1s"}, "seq_hole_after"},
		{"uploads s3 without bucket", []string{"IMD_UPLOADS_STORE=s3", "IMD_UPLOADS_S3_REGION=x"}, "uploads.s3 bucket"},
		{"unknown uploads store", []string{"IMD_UPLOADS_STORE=ftp"}, "uploads.store"},
		{"tls cert without key", []string{"IMD_REDIS_TLS_ENABLED=true", "IMD_REDIS_TLS_CERT_FILE=/x.crt"}, "redis.tls: cert_file and key_file"},
		{"tls files but off", []string{"IMD_MYSQL_TLS_CA_FILE=/ca.crt"}, "mysql.tls: files or server_name set but enabled is false"},
		{"sentinels without master set", []string{"IMD_REDIS_SENTINEL_ADDRS=127.0.0.1:26379"}, "master_set is empty"},
		{"master set without sentinels", []string{"IMD_REDIS_SENTINEL_MASTER_SET=imd"}, "master_set needs addrs"},
		{"sentinel without port", []string{"IMD_REDIS_SENTINEL_MASTER_SET=imd", "IMD_REDIS_SENTINEL_ADDRS=127.0.0.1:26379,sentinel-b"}, `"sentinel-b"`},
		{"negative sentinel refresh", []string{"IMD_REDIS_SENTINEL_MASTER_SET=imd", "IMD_REDIS_SENTINEL_ADDRS=127.0.0.1:26379", "IMD_REDIS_SENTINEL_REFRESH=-1s"}, "refresh"},
		// The environment itself: a variable that names no key, a secret given twice, an
		// unreadable or empty secret file, _FILE on a key that is no secret.
		{"misspelt key", []string{"IMD_TCP_ADR=127.0.0.1:1"}, "IMD_TCP_ADR"},
		{"misspelt section", []string{"IMD_RATELIMIT_HTTP_PER_SECOND=1"}, "IMD_RATELIMIT_HTTP_PER_SECOND"},
		{"secret twice", []string{"IMD_ADMIN_KEY=admin-key-456", "IMD_ADMIN_KEY_FILE=" + empty}, "both set"},
		{"missing secret file", []string{"IMD_REDIS_PASSWORD_FILE=/nonexistent/imd-secret"}, "IMD_REDIS_PASSWORD_FILE"},
		{"empty secret file", []string{"IMD_REDIS_PASSWORD_FILE=" + empty}, "is empty"},
		{"file of a plain key", []string{"IMD_TCP_ADDR_FILE=" + empty}, "IMD_TCP_ADDR_FILE"},
	}
	path := writeConfig(t, validYAML)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(path, tt.env)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want error mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestSentinelFromEnv(t *testing.T) {
	cfg, err := Load(writeConfig(t, validYAML), []string{"IMD_REDIS_SENTINEL_MASTER_SET=imd",
		"IMD_REDIS_SENTINEL_ADDRS=127.0.0.1:26379, 127.0.0.1:26380", "IMD_REDIS_SENTINEL_PASSWORD=s-pw"})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Redis.Sentinel
	if !s.Enabled() || s.MasterSet != "imd" || s.Addrs != "127.0.0.1:26379, 127.0.0.1:26380" || s.Password != "s-pw" || s.Refresh != 5*time.Second {
		t.Fatalf("sentinel = %+v", s)
	}
}

func TestUnknownKeyRejected(t *testing.T) {
	if _, err := Load(writeConfig(t, validYAML+"bogus: 1\n"), nil); err == nil {
		t.Fatal("a misspelled key must not be ignored silently")
	}
}

const validYAML = `env: prod
admin_key: admin-key-123
token_secret: 0123456789abcdef0123
mysql:
  dsn: "x:y@tcp(127.0.0.1:3306)/"
tenants:
  - name: default
`

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "imd.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
