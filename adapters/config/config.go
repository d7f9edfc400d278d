// Package config loads the YAML configuration of imd (seed 003 §19, extended with tenants and
// listener modes) and applies environment overrides: IMD_ + the upper-cased key path joined
// by '_', e.g. IMD_MYSQL_DSN or IMD_TCP_ADDR; keys tagged secret also take IMD_<KEY>_FILE.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/goccy/go-yaml"

	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/loop/retention"
	"github.com/imdhq/imd/core/usecase/longsearch"
	"github.com/imdhq/imd/core/usecase/reactions"
)

// Config is the whole server configuration.
type Config struct {
	Env         string     `yaml:"env"`
	NodeID      int        `yaml:"node_id"`
	AdminKey    string     `yaml:"admin_key" secret:"true"`
	TokenSecret string     `yaml:"token_secret" secret:"true"`
	HTTP        HTTP       `yaml:"http"`
	TCP         TCP        `yaml:"tcp"`
	MySQL       MySQL      `yaml:"mysql"`
	Redis       Redis      `yaml:"redis"`
	Tenants     []Tenant   `yaml:"tenants"`
	Registry    Registry   `yaml:"tenant_registry"`
	Uploads     Uploads    `yaml:"uploads"`
	TaskPool    TaskPool   `yaml:"taskpool"`
	Deliver     Deliver    `yaml:"deliver"`
	Cluster     Cluster    `yaml:"cluster"`
	Presence    Presence   `yaml:"presence"`
	Receipts    Receipts   `yaml:"receipts"`
	Reactions   Reactions  `yaml:"reactions"`
	Push        Push       `yaml:"push"`
	Message     Message    `yaml:"message"`
	RateLimit   RateLimit  `yaml:"rate_limit"`
	Shard       Shard      `yaml:"shard"`
	Shutdown    Shutdown   `yaml:"shutdown"`
	Log         LogOptions `yaml:"log"`
	Archive     Archive    `yaml:"archive"`
	Search      Search     `yaml:"search"`
	Migration   Migration  `yaml:"migration"`
	Webhooks    Webhooks   `yaml:"webhooks"`
}

type HTTP struct {
	Addr string `yaml:"addr"`
	// Public allows a non-loopback addr; see Listener.
	Public bool `yaml:"public"`
	// MetricsAddr, when set, is a second listener serving only GET /metrics, for a scraper on
	// a private network that must not reach the APIs (deploy/compose.yaml).
	MetricsAddr string `yaml:"metrics_addr"`
	// AdminAddr, when set, is a listener of its own for the admin API, the operator console
	// and the runtime profiles, and addr no longer serves them (issue 33): Nginx exposes addr
	// to clients, never this one. Loopback unless public, like addr.
	AdminAddr string `yaml:"admin_addr"`
	// WebSocket is GET /ws on this listener (PROTOCOL §7).
	WebSocket WebSocket `yaml:"websocket"`
	// DevSignIn serves POST /dev/v1/tenants/{tenant}/signin on addr: a token for any user id,
	// no key asked, so the web chat signs in with an id alone (issue 31). For a developer's
	// machine only: off by default, and no production config switches it on (DESIGN §12).
	DevSignIn bool `yaml:"dev_signin"`
}

// WebSocket configures the browser transport. Commands, limits and the push-ack timeout are
// the tcp section's: a device is one device on either transport.
type WebSocket struct {
	// AllowedOrigins are the Origin patterns browsers may connect from ("chat.example.com",
	// "*.example.com", "https://app.example.com"); a page of the host it connects to is always
	// allowed. Others are refused with 403 before the upgrade.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// IdleTimeout closes a connection silent for this long. Default 120s.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// WriteTimeout closes a connection that took longer to take one message (a browser that
	// stopped reading). Default 10s.
	WriteTimeout time.Duration `yaml:"write_timeout"`
}

type TCP struct {
	Addr string `yaml:"addr"`
	// Public allows a non-loopback addr; see Listener.
	Public          bool          `yaml:"public"`
	ProxyProtocol   bool          `yaml:"proxy_protocol"`
	TLS             string        `yaml:"tls"` // off | native
	CertFile        string        `yaml:"cert_file"`
	KeyFile         string        `yaml:"key_file"`
	MaxFrameSize    int           `yaml:"max_frame_size"`
	IdleTimeout     time.Duration `yaml:"idle_timeout"`
	KeepAlive       time.Duration `yaml:"keepalive"`
	Multicore       bool          `yaml:"multicore"`
	CompressMinSize int           `yaml:"compress_min_size"`
	RequestTimeout  time.Duration `yaml:"request_timeout"`
	OutboundLimit   int           `yaml:"outbound_limit"`
	// ProxyTimeout bounds the wait for the PROXY header after accept (proxy_protocol: true),
	// like Nginx's proxy_protocol_timeout.
	ProxyTimeout time.Duration `yaml:"proxy_timeout"`
	// HandshakeTimeout bounds a TLS handshake in tls: native mode.
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`
	// PushAckTimeout is how long a MESSAGE push waits for its PUSH_ACK before it counts as
	// unacknowledged; the connection is never closed for it.
	PushAckTimeout time.Duration `yaml:"push_ack_timeout"`
}

type MySQL struct {
	// DSN is a go-sql-driver DSN; check masks only its password.
	DSN          string    `yaml:"dsn" secret:"dsn"`
	MaxOpenConns int       `yaml:"max_open_conns"`
	TLS          ClientTLS `yaml:"tls"`
}

type Redis struct {
	Addr string `yaml:"addr"`
	// Username and Password authenticate with AUTH: an ACL user, or only a password for
	// requirepass.
	Username string    `yaml:"username"`
	Password string    `yaml:"password" secret:"true"`
	TLS      ClientTLS `yaml:"tls"`
	// Sentinel, when its master_set is named, finds the master through Redis Sentinel and
	// follows its failovers; addr is then not used (docs/NODES.md "Redis with a replica").
	Sentinel Sentinel `yaml:"sentinel"`
}

// Sentinel names the sentinels that monitor imd's Redis master. Username and Password are the
// sentinels' own AUTH (Redis' sentinel-user and sentinel-pass); the master and replica take
// redis.username and redis.password, and redis.tls applies to both.
type Sentinel struct {
	MasterSet string `yaml:"master_set"`
	// Addrs is a comma-separated list of sentinel addresses, as redis.addr is of seeds.
	Addrs    string `yaml:"addrs"`
	Username string `yaml:"username"`
	Password string `yaml:"password" secret:"true"`
	// Refresh is how often the client asks the sentinels who is master, besides following
	// their +switch-master events: one missed event would otherwise bind it to a demoted
	// master for good (0 turns it off).
	Refresh time.Duration `yaml:"refresh"`
}

// Enabled reports whether imd reaches Redis through Sentinel.
func (s Sentinel) Enabled() bool { return s.MasterSet != "" }

func (s Sentinel) validate() error {
	if !s.Enabled() {
		if s.Addrs != "" || s.Username != "" || s.Password != "" {
			return errors.New("redis.sentinel: addrs or credentials set but master_set is empty")
		}
		return nil
	}
	if s.Refresh < 0 {
		return errors.New("redis.sentinel.refresh must not be negative")
	}
	if strings.TrimSpace(s.Addrs) == "" {
		return errors.New("redis.sentinel: master_set needs addrs")
	}
	for _, a := range strings.Split(s.Addrs, ",") {
		if _, _, err := net.SplitHostPort(strings.TrimSpace(a)); err != nil {
			return fmt.Errorf("redis.sentinel.addrs: %q: %w", a, err)
		}
	}
	return nil
}

// Tenant maps a tenant name to its database (DESIGN §1: one database per tenant) and, for a
// tenant on another MySQL server than mysql.dsn, that server.
type Tenant struct {
	Name     string `yaml:"name"`
	Database string `yaml:"database"`
	// DSN is the go-sql-driver DSN of the tenant's server (its database part ignored; mysql.tls
	// and max_open_conns apply); empty is mysql.dsn.
	DSN string `yaml:"dsn" secret:"dsn"`
}

type TaskPool struct {
	Workers int `yaml:"workers"`
	Queue   int `yaml:"queue"`
}

// Deliver tunes the deliver queue and its consumers: one per tenant and partition on each node.
// A topic's jobs share a partition, so its recipients get its messages in seq order; every
// node must use the same partition count (a changed count is moved over at boot).
type Deliver struct {
	Partitions int `yaml:"partitions"`
	// ReorderWait is how long a message waits for the seqs before it when their sends are not
	// running on this node (a send that failed after its seq was allocated leaves a hole for
	// good); a send still running here is waited for, up to 30 s.
	ReorderWait time.Duration `yaml:"reorder_wait"`
	TakeTimeout time.Duration `yaml:"take_timeout"`
	DoneTTL     time.Duration `yaml:"done_ttl"`
	MaxAttempts int           `yaml:"max_attempts"`
	// The list repair (seed 003 §20 item 13): every repair_interval each node re-applies to
	// the conversation lists the messages of the gaps consumers noted at least repair_settle
	// ago, and of the sampled topics whose newest message is past their lists; a gap or
	// message older than repair_window is left (at least done_ttl: the list markers of a job
	// behind its topic live that long).
	RepairInterval time.Duration `yaml:"repair_interval"`
	RepairSettle   time.Duration `yaml:"repair_settle"`
	RepairWindow   time.Duration `yaml:"repair_window"`
	// After a Redis failover or restart (a changed lineage of the masters, seen at each
	// repair_interval), each node re-applies the messages stored from heal_lookback before
	// the lineage was last seen unchanged up to the change (DESIGN §5 "After a Redis
	// failover"): at least the replication lag a failover may lose. The heal must end while
	// the list markers of those messages live, so heal_lookback + 2 × repair_interval +
	// repair_settle is at most done_ttl.
	HealLookback time.Duration `yaml:"heal_lookback"`
}

// Cluster tunes several nodes on one tenant (DESIGN §11): every node renews a lease in Redis,
// and a node killed without shutdown still looks alive, and holds its deliver partitions, for
// up to lease_ttl. Each node's push channel holds up to backlog envelopes; past it, pushes for
// that node's devices become MISSED_MESSAGE rows.
type Cluster struct {
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	Backlog  int           `yaml:"backlog"`
}

// Presence sizes what others see of a user (issue 31): a user's presence changes reach the
// friends and the members of the user's groups of at most group_limit members (bigger groups
// query); typing notices reach the other members of a conversation of at most
// typing_group_limit members (bigger groups refuse TYPING), last typing_expires unless
// renewed, and a device may send typing_per_device of them per typing_window. After a registry
// loss heals, a node pushes the state of heal_rate users a second, at most heal_queue waiting
// (docs/DESIGN.md §13 "Unknown until healed").
type Presence struct {
	GroupLimit       int           `yaml:"group_limit"`
	TypingGroupLimit int           `yaml:"typing_group_limit"`
	TypingExpires    time.Duration `yaml:"typing_expires"`
	TypingPerDevice  int           `yaml:"typing_per_device"`
	TypingWindow     time.Duration `yaml:"typing_window"`
	HealRate         int           `yaml:"heal_rate"`
	HealQueue        int           `yaml:"heal_queue"`
}

// Receipts sizes read receipts (issue 31): READ_STATE lists the readers of a message in groups
// of at most group_limit members; bigger groups get the counts only.
type Receipts struct {
	GroupLimit int `yaml:"group_limit"`
}

// Reactions bounds reactions and pins (issue 31): at most per_message distinct emojis on one
// message, per_user emojis of one user on one message, and pins_per_conversation pinned
// messages in one conversation (its pinned list stays one short read). Past a bound an ADD is
// refused, never an old one dropped.
type Reactions struct {
	PerMessage          int `yaml:"per_message"`
	PerUser             int `yaml:"per_user"`
	PinsPerConversation int `yaml:"pins_per_conversation"`
}

// Push is the system push service the deliver worker hands missed messages to (seed 003
// §12.2); without a webhook URL notifications are dropped.
type Push struct {
	Webhook string        `yaml:"webhook"`
	Timeout time.Duration `yaml:"timeout"`
	Queue   int           `yaml:"queue"`
	// APNs and FCM send native alerts themselves (docs/DESIGN.md issue-32 "Native push"),
	// each on when its credential is set; the webhook above is posted to either way.
	APNs APNs `yaml:"apns"`
	FCM  FCM  `yaml:"fcm"`
	// HideContent lists the tenants whose native alerts carry a title only, no message text.
	HideContent []string `yaml:"hide_content"`
	// Attempts per native alert before it becomes a dead letter; retries wait Backoff,
	// doubling up to MaxBackoff.
	Attempts   int           `yaml:"attempts"`
	Backoff    time.Duration `yaml:"backoff"`
	MaxBackoff time.Duration `yaml:"max_backoff"`
	// AckWait is how long a user whose devices took a MESSAGE live has to acknowledge or read
	// it before the user gets the alert an offline user gets (docs/DESIGN.md issue-32 "Native
	// push"); 0 switches that off.
	AckWait time.Duration `yaml:"ack_wait"`
}

// APNs is the provider key (.p8) of an Apple developer team: IMD_PUSH_APNS_KEY_FILE names the
// .p8 file. Host is production, development or a URL.
type APNs struct {
	Key    string `yaml:"key" secret:"true"`
	KeyID  string `yaml:"key_id"`
	TeamID string `yaml:"team_id"`
	Host   string `yaml:"host"`
}

// FCM is a Firebase project's service account: IMD_PUSH_FCM_CREDENTIALS_FILE names its JSON
// key file. Endpoint is FCM's unless set (a local fake in tests).
type FCM struct {
	Credentials string `yaml:"credentials" secret:"true"`
	Endpoint    string `yaml:"endpoint"`
}

// Webhooks paces the delivery of event webhooks (docs/DESIGN.md issue-32 part 2); the
// endpoints themselves are managed per tenant over the admin API.
type Webhooks struct {
	// Interval is how often a node looks for events to deliver.
	Interval time.Duration `yaml:"interval"`
	// Settle is how far back each pass looks again for commits that became visible late.
	Settle      time.Duration `yaml:"settle"`
	FirstRetry  time.Duration `yaml:"first_retry"`
	MaxBackoff  time.Duration `yaml:"max_backoff"`
	MaxAttempts int           `yaml:"max_attempts"`
	// Timeout bounds one request to an endpoint.
	Timeout time.Duration `yaml:"timeout"`
	// KeepEvents is how long the member, friendship and report events stay in
	// t_webhook_events, so a replay reaches that far back for them.
	KeepEvents time.Duration `yaml:"keep_events"`
}

type Message struct {
	MaxContentSize int   `yaml:"max_content_size"`
	SyncLimit      int   `yaml:"sync_limit"`
	MsgIDExpireMS  int64 `yaml:"msgid_expire_ms"`
	// RecallWindow is how long after sending its sender may recall a message.
	RecallWindow time.Duration `yaml:"recall_window"`
	// SystemAccounts may send to any user and group and alone send type system (seed 003
	// §9.4); env IMD_MESSAGE_SYSTEM_ACCOUNTS=1,2.
	SystemAccounts []int64 `yaml:"system_accounts"`
}

// Registry is where provisioned tenants are recorded: a database of its own on the MySQL
// server, shared by every node, which each node rereads every refresh_interval.
type Registry struct {
	Database        string        `yaml:"database"`
	RefreshInterval time.Duration `yaml:"refresh_interval"`
}

// Uploads configures the object store behind upload credentials. Store fs (development):
// files under dir, served by the HTTP listener under /files/ at base_url (default
// http://<http.addr>), on URLs signed with secret (default: derived from token_secret).
// Store s3 (production): clients PUT and GET media straight at the bucket on presigned URLs.
type Uploads struct {
	Store      string        `yaml:"store"` // fs | s3
	S3         S3Bucket      `yaml:"s3"`
	Dir        string        `yaml:"dir"`
	BaseURL    string        `yaml:"base_url"`
	Secret     string        `yaml:"secret" secret:"true"`
	MaxSize    int64         `yaml:"max_size"`
	URLTTL     time.Duration `yaml:"url_ttl"`
	Thumbnails Thumbnails    `yaml:"thumbnails"`
}

// Thumbnails bounds the thumbnails made of confirmed image uploads (issue 32): side is the
// long side in pixels; images of more than max_bytes bytes or max_pixels pixels are refused
// unread; workers are made at once, each holding its bytes, read only once its turn has come,
// and up to 8 bytes per pixel.
type Thumbnails struct {
	Side      int   `yaml:"side"`
	MaxBytes  int64 `yaml:"max_bytes"`
	MaxPixels int64 `yaml:"max_pixels"`
	Workers   int   `yaml:"workers"`
}

// RateLimit budgets are per device (seed 003 §13, §19); PerIP budgets are shared by every
// connection of one real client IP. Each allows its whole budget as a burst; 0 is unlimited.
type RateLimit struct {
	MessagePerSecond      int         `yaml:"message_per_second"`
	AuthPerSecond         int         `yaml:"auth_per_second"`
	SyncInboxPerMinute    int         `yaml:"sync_inbox_per_minute"`
	SyncMessagesPerMinute int         `yaml:"sync_messages_per_minute"`
	HistoryPerMinute      int         `yaml:"history_per_minute"`
	HTTPPerSecond         int         `yaml:"http_per_second"` // client HTTP API, per user
	PerIP                 IPRateLimit `yaml:"per_ip"`
}

// IPRateLimit is RateLimit's budgets for one client IP (IPv6: one /64).
type IPRateLimit struct {
	MessagePerSecond      int `yaml:"message_per_second"`
	AuthPerSecond         int `yaml:"auth_per_second"`
	SyncInboxPerMinute    int `yaml:"sync_inbox_per_minute"`
	SyncMessagesPerMinute int `yaml:"sync_messages_per_minute"`
	HistoryPerMinute      int `yaml:"history_per_minute"`
	HTTPPerSecond         int `yaml:"http_per_second"`
}

type Shard struct {
	CheckInterval time.Duration `yaml:"check_interval"`
	SealingDays   int           `yaml:"sealing_days"`
	// LockTTL bounds the month-switch lock one node holds (seed 000 §4.3).
	LockTTL time.Duration `yaml:"lock_ttl"`
	// DedupRetentionDays is how long dedup records live, 7–30 (seed 000 §3.5).
	DedupRetentionDays int `yaml:"dedup_retention_days"`
	// DedupPurgeBatch is how many expired dedup records one DELETE removes.
	DedupPurgeBatch int `yaml:"dedup_purge_batch"`
	// SeqHoleSweepInterval is how often a node looks for seq holes (DESIGN §4).
	SeqHoleSweepInterval time.Duration `yaml:"seq_hole_sweep_interval"`
	// SeqHoleAfter is how old the message after a seq hole must be before the hole is closed
	// with a tombstone: longer than any retry that still holds the missing seq.
	SeqHoleAfter time.Duration `yaml:"seq_hole_after"`
	RouteRepair  RouteRepair   `yaml:"route_repair"`
}

// RouteRepair tunes the route repair loop and the sampled reconciliation (seed 000 §3.4).
type RouteRepair struct {
	Interval          time.Duration `yaml:"interval"`
	Batch             int           `yaml:"batch"`
	FallbackLimit     int           `yaml:"fallback_limit"`
	RebuildBatch      int           `yaml:"rebuild_batch"`
	ReconcileInterval time.Duration `yaml:"reconcile_interval"`
	ReconcileSample   int           `yaml:"reconcile_sample"`
	ReconcileDeep     int           `yaml:"reconcile_deep"`
	ReconcileMonths   int           `yaml:"reconcile_months"`
}

// Archive is where archived months go and how they are read and retained (seed 000 §10).
type Archive struct {
	Store string `yaml:"store"` // fs | s3
	// Dir is the local-filesystem blob store's root (store: fs).
	Dir string   `yaml:"dir"`
	S3  S3Bucket `yaml:"s3"`
	// ChunkRows is how many rows of a topic one archive file holds.
	ChunkRows int `yaml:"chunk_rows"`
	// ManifestCache and ChunkCache size the reader's caches (manifests, decoded chunks).
	ManifestCache int `yaml:"manifest_cache"`
	ChunkCache    int `yaml:"chunk_cache"`
	// StateTTL bounds how long a node reads a month from MySQL after another node archived it.
	StateTTL time.Duration `yaml:"state_ttl"`
	// RetentionInterval is how often the retention policies run; 0 runs them only on command.
	RetentionInterval time.Duration `yaml:"retention_interval"`
	// Retention is every tenant's policy unless TenantRetention names the tenant.
	Retention       Retention            `yaml:"retention"`
	TenantRetention map[string]Retention `yaml:"tenant_retention"`
}

// S3Bucket locates an S3-compatible bucket.
type S3Bucket struct {
	Endpoint  string `yaml:"endpoint"` // empty: AWS
	Region    string `yaml:"region"`
	Bucket    string `yaml:"bucket"`
	AccessKey string `yaml:"access_key" secret:"true"`
	SecretKey string `yaml:"secret_key" secret:"true"`
	Prefix    string `yaml:"prefix"`
	PathStyle bool   `yaml:"path_style"`
	// PublicEndpoint is the endpoint in presigned URLs (uploads), when clients reach the
	// store under another name than imd; empty is endpoint.
	PublicEndpoint string `yaml:"public_endpoint"`
}

// Retention is one tenant's policy; 0 switches a step off.
type Retention struct {
	KeepOnlineMonths int `yaml:"keep_online_months"`
	PurgeAfterMonths int `yaml:"purge_after_months"`
}

// Policy is the retention as core/loop/retention applies it.
func (r Retention) Policy() retention.Policy {
	return retention.Policy{KeepOnlineMonths: r.KeepOnlineMonths, PurgeAfterMonths: r.PurgeAfterMonths}
}

// TenantPolicies are the policies of the tenants TenantRetention names.
func (a Archive) TenantPolicies() map[string]retention.Policy {
	perTenant := make(map[string]retention.Policy, len(a.TenantRetention))
	for t, r := range a.TenantRetention {
		perTenant[t] = r.Policy()
	}
	return perTenant
}

// Search is the long-term search index (seed 000 §6.6): one Bleve index per tenant under dir.
type Search struct {
	Dir string `yaml:"dir"`
	// Queue bounds the index updates waiting after COMMIT; more are dropped (reindex repairs).
	Queue int `yaml:"queue"`
	// Writers is how many full batches are written into the indexes at once (issue 30 part 3).
	Writers int `yaml:"writers"`
}

// Shutdown is how a node stops (docs/NODES.md "Rolling restarts"): on SIGTERM /readyz fails
// at once, everything keeps serving for UnreadyGrace so the balancer's health check takes the
// node out, then the clients are told to reconnect in small random batches over DrainWindow;
// Timeout bounds the whole stop.
type Shutdown struct {
	Timeout      time.Duration `yaml:"timeout"`
	UnreadyGrace time.Duration `yaml:"unready_grace"`
	DrainWindow  time.Duration `yaml:"drain_window"`
}

// stopReserve is what shutdown.timeout must leave after the grace and the drain window: the
// listeners, the loops' last jobs and the stores still stop within it.
const stopReserve = 5 * time.Second

func (s Shutdown) validate() error {
	if s.Timeout <= 0 || s.UnreadyGrace < 0 || s.DrainWindow < 0 {
		return errors.New("shutdown.timeout must be positive, shutdown.unready_grace and shutdown.drain_window not negative")
	}
	if s.UnreadyGrace+s.DrainWindow > s.Timeout-stopReserve {
		return fmt.Errorf("shutdown.unready_grace + shutdown.drain_window (%v) must leave %v of shutdown.timeout (%v) for the rest of the stop",
			s.UnreadyGrace+s.DrainWindow, stopReserve, s.Timeout)
	}
	return nil
}

type LogOptions struct {
	Level string `yaml:"level"` // debug | info | warn | error
}

// Default returns the configuration used for keys a file leaves out.
func Default() Config {
	return Config{
		Env:      "prod",
		NodeID:   1,
		HTTP:     HTTP{Addr: "127.0.0.1:8080", WebSocket: WebSocket{IdleTimeout: 120 * time.Second, WriteTimeout: 10 * time.Second}},
		TCP:      TCP{Addr: "127.0.0.1:9000", TLS: "off", MaxFrameSize: 65536, IdleTimeout: 120 * time.Second, KeepAlive: 30 * time.Second, Multicore: true, CompressMinSize: 512, RequestTimeout: 10 * time.Second, OutboundLimit: 4096, ProxyTimeout: 3 * time.Second, HandshakeTimeout: 10 * time.Second, PushAckTimeout: 30 * time.Second},
		MySQL:    MySQL{MaxOpenConns: 64},
		Redis:    Redis{Addr: "127.0.0.1:6379", Sentinel: Sentinel{Refresh: 5 * time.Second}},
		TaskPool: TaskPool{Workers: 256, Queue: 4096},
		Deliver: Deliver{Partitions: 16, ReorderWait: 200 * time.Millisecond, TakeTimeout: 5 * time.Second, DoneTTL: 10 * time.Minute, MaxAttempts: 5,
			RepairInterval: 10 * time.Second, RepairSettle: 30 * time.Second, RepairWindow: time.Hour,
			HealLookback: time.Minute},
		Cluster:  Cluster{LeaseTTL: 10 * time.Second, Backlog: 10_000},
		Receipts: Receipts{GroupLimit: 200},
		Reactions: Reactions{PerMessage: reactions.DefaultPerMessage, PerUser: reactions.DefaultPerUser,
			PinsPerConversation: msgref.MaxPins},
		Presence: Presence{GroupLimit: 200, TypingGroupLimit: 200, TypingExpires: 6 * time.Second, TypingPerDevice: 10,
			TypingWindow: 10 * time.Second, HealRate: 200, HealQueue: 10_000},
		Push:     Push{Timeout: 2 * time.Second, Queue: 10_000, Attempts: 4, Backoff: time.Second, MaxBackoff: time.Minute, AckWait: 10 * time.Second, APNs: APNs{Host: "production"}},
		Registry: Registry{Database: "imd_registry", RefreshInterval: 30 * time.Second},
		Uploads: Uploads{Store: "fs", Dir: filepath.Join(os.TempDir(), "imd-uploads"), MaxSize: 100 << 20, URLTTL: 15 * time.Minute,
			Thumbnails: Thumbnails{Side: 320, MaxBytes: 25 << 20, MaxPixels: 40_000_000, Workers: 2}},
		Message: Message{MaxContentSize: 65536, SyncLimit: 200, MsgIDExpireMS: 300_000, RecallWindow: 2 * time.Minute},
		RateLimit: RateLimit{MessagePerSecond: 20, AuthPerSecond: 5, SyncInboxPerMinute: 60, SyncMessagesPerMinute: 120, HistoryPerMinute: 200, HTTPPerSecond: 20,
			// Ten devices' worth per address: room for a household or an office behind NAT.
			PerIP: IPRateLimit{MessagePerSecond: 200, AuthPerSecond: 50, SyncInboxPerMinute: 600, SyncMessagesPerMinute: 1200, HistoryPerMinute: 2000, HTTPPerSecond: 200}},
		Shard: Shard{CheckInterval: time.Minute, SealingDays: 7, LockTTL: 30 * time.Second, DedupRetentionDays: 30, DedupPurgeBatch: 1000,
			SeqHoleSweepInterval: time.Minute, SeqHoleAfter: 10 * time.Minute, RouteRepair: defaultRouteRepair()},
		Shutdown: Shutdown{Timeout: 20 * time.Second, UnreadyGrace: 5 * time.Second, DrainWindow: 5 * time.Second},
		Log:      LogOptions{Level: "info"},
		Archive: Archive{Store: "fs", Dir: filepath.Join(os.TempDir(), "imd-archive"), ChunkRows: 1000,
			ManifestCache: 64, ChunkCache: 256, StateTTL: 10 * time.Second},
		Search:    Search{Dir: filepath.Join(os.TempDir(), "imd-search"), Queue: 10_000, Writers: longsearch.DefaultWriters},
		Migration: defaultMigration(),
		Webhooks: Webhooks{Interval: time.Second, Settle: 10 * time.Second, FirstRetry: time.Second, MaxBackoff: 10 * time.Minute,
			MaxAttempts: 8, Timeout: 10 * time.Second, KeepEvents: 90 * 24 * time.Hour},
	}
}

// defaultRouteRepair is the route repair part of Default.
func defaultRouteRepair() RouteRepair {
	return RouteRepair{
		Interval: time.Second, Batch: 100, FallbackLimit: 10_000, RebuildBatch: 500,
		ReconcileInterval: 5 * time.Minute, ReconcileSample: 100, ReconcileDeep: 5, ReconcileMonths: 2,
	}
}

// Load reads path (if not empty) over the defaults, applies environment overrides from
// environ (os.Environ() form) and validates the result.
func Load(path string, environ []string) (Config, error) {
	cfg := Default()
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("read config: %w", err)
		}
		if err := yaml.UnmarshalWithOptions(raw, &cfg, yaml.Strict()); err != nil {
			return Config{}, fmt.Errorf("parse config %s: %w", path, err)
		}
	}
	if err := applyEnv(&cfg, environ); err != nil {
		return Config{}, err
	}
	return cfg, cfg.Validate()
}

// Validate rejects configurations imd cannot serve safely.
func (c Config) Validate() error {
	var errs []error
	if c.Env != "dev" && c.Env != "prod" {
		errs = append(errs, errors.New("env must be dev or prod"))
	}
	if c.NodeID < 0 || c.NodeID > 1023 {
		errs = append(errs, errors.New("node_id must be 0-1023"))
	}
	if len(c.AdminKey) < 8 {
		errs = append(errs, errors.New("admin_key must be at least 8 characters"))
	}
	if len(c.TokenSecret) < 16 {
		errs = append(errs, errors.New("token_secret must be at least 16 characters"))
	}
	if c.MySQL.DSN == "" {
		errs = append(errs, errors.New("mysql.dsn is required"))
	}
	if r := c.Reactions; r.PerMessage <= 0 || r.PerUser <= 0 || r.PinsPerConversation <= 0 {
		errs = append(errs, errors.New("reactions.per_message, reactions.per_user and reactions.pins_per_conversation must be positive"))
	}
	if c.TCP.TLS != "off" && c.TCP.TLS != "native" {
		errs = append(errs, errors.New("tcp.tls must be off or native"))
	}
	if c.TCP.TLS == "native" && (c.TCP.CertFile == "" || c.TCP.KeyFile == "") {
		errs = append(errs, errors.New("tcp.tls native needs cert_file and key_file"))
	}
	if c.TCP.MaxFrameSize <= 0 || c.TCP.MaxFrameSize > 65536 {
		errs = append(errs, errors.New("tcp.max_frame_size must be 1-65536"))
	}
	if c.TCP.ProxyTimeout <= 0 || c.TCP.HandshakeTimeout <= 0 || c.TCP.PushAckTimeout <= 0 {
		errs = append(errs, errors.New("tcp.proxy_timeout, tcp.handshake_timeout and tcp.push_ack_timeout must be positive"))
	}
	if r, ip := c.RateLimit, c.RateLimit.PerIP; min(r.MessagePerSecond, r.AuthPerSecond, r.SyncInboxPerMinute, r.SyncMessagesPerMinute, r.HistoryPerMinute, r.HTTPPerSecond,
		ip.MessagePerSecond, ip.AuthPerSecond, ip.SyncInboxPerMinute, ip.SyncMessagesPerMinute, ip.HistoryPerMinute, ip.HTTPPerSecond) < 0 {
		errs = append(errs, errors.New("rate_limit budgets must not be negative (0 is unlimited)"))
	}
	if len(c.Tenants) == 0 {
		errs = append(errs, errors.New("at least one tenant is required"))
	}
	seen := map[string]bool{}
	for _, t := range c.Tenants {
		if !tenant.Valid(t.Name) {
			errs = append(errs, fmt.Errorf("tenant name %q is invalid", t.Name))
		}
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("tenant %q listed twice", t.Name))
		}
		if _, err := mysql.ParseDSN(t.DSN); t.DSN != "" && err != nil {
			errs = append(errs, fmt.Errorf("tenant %q: dsn does not parse", t.Name))
		}
		seen[t.Name] = true
	}
	if c.TaskPool.Workers <= 0 || c.TaskPool.Queue <= 0 {
		errs = append(errs, errors.New("taskpool workers and queue must be positive"))
	}
	if c.Deliver.Partitions <= 0 || c.Deliver.ReorderWait <= 0 || c.Deliver.TakeTimeout <= 0 || c.Deliver.MaxAttempts <= 0 {
		errs = append(errs, errors.New("deliver partitions, reorder_wait, take_timeout and max_attempts must be positive"))
	}
	if c.Deliver.RepairInterval <= 0 || c.Deliver.RepairSettle <= 0 || c.Deliver.RepairWindow < c.Deliver.DoneTTL {
		errs = append(errs, errors.New("deliver repair_interval and repair_settle must be positive and repair_window at least done_ttl"))
	}
	if d := c.Deliver; d.HealLookback <= 0 || d.HealLookback+2*d.RepairInterval+d.RepairSettle > d.DoneTTL {
		errs = append(errs, errors.New("deliver heal_lookback must be positive and heal_lookback + 2 × repair_interval + repair_settle at most done_ttl"))
	}
	if c.Cluster.LeaseTTL < time.Second || c.Cluster.Backlog <= 0 {
		errs = append(errs, errors.New("cluster.lease_ttl must be at least 1s and cluster.backlog positive"))
	}
	if c.Message.RecallWindow <= 0 {
		errs = append(errs, errors.New("message.recall_window must be positive"))
	}
	for _, id := range c.Message.SystemAccounts {
		if id <= 0 {
			errs = append(errs, errors.New("message.system_accounts must be positive user ids"))
			break
		}
	}
	if c.Registry.Database == "" || c.Registry.RefreshInterval <= 0 {
		errs = append(errs, errors.New("tenant_registry.database and refresh_interval are required"))
	}
	for _, t := range c.Tenants {
		if t.DatabaseName() == c.Registry.Database {
			errs = append(errs, fmt.Errorf("tenant %q uses the tenant registry's database", t.Name))
		}
	}
	if c.Uploads.Dir == "" || c.Uploads.MaxSize <= 0 || c.Uploads.URLTTL <= 0 {
		errs = append(errs, errors.New("uploads.dir, max_size and url_ttl are required"))
	}
	if th := c.Uploads.Thumbnails; th.Side <= 0 || th.MaxBytes <= 0 || th.MaxPixels <= 0 || th.Workers <= 0 {
		errs = append(errs, errors.New("uploads.thumbnails side, max_bytes, max_pixels and workers must be positive"))
	}
	if c.Shard.CheckInterval <= 0 || c.Shard.SealingDays < 0 || c.Shard.LockTTL <= 0 || c.Shard.DedupPurgeBatch <= 0 {
		errs = append(errs, errors.New("shard check_interval, lock_ttl and dedup_purge_batch must be positive, sealing_days not negative"))
	}
	if c.Shard.DedupRetentionDays < 7 || c.Shard.DedupRetentionDays > 30 {
		errs = append(errs, errors.New("shard.dedup_retention_days must be 7-30"))
	}
	if p := c.Push; p.Attempts <= 0 || p.Backoff <= 0 || p.MaxBackoff < p.Backoff {
		errs = append(errs, errors.New("push: attempts and backoff must be positive, max_backoff at least backoff"))
	}
	if c.Push.AckWait < 0 {
		errs = append(errs, errors.New("push.ack_wait must not be negative (0 switches it off)"))
	}
	if a := c.Push.APNs; a.Key != "" && (a.KeyID == "" || a.TeamID == "" || a.Host == "") {
		errs = append(errs, errors.New("push.apns: key_id, team_id and host are required with a key"))
	}
	if w := c.Webhooks; w.Interval <= 0 || w.Settle <= 0 || w.FirstRetry <= 0 || w.MaxBackoff < w.FirstRetry || w.MaxAttempts <= 0 || w.Timeout <= 0 ||
		w.KeepEvents <= 0 {
		errs = append(errs, errors.New("webhooks: interval, settle, first_retry, max_attempts, timeout and keep_events must be positive, max_backoff at least first_retry"))
	}
	if c.Shard.SeqHoleSweepInterval <= 0 || c.Shard.SeqHoleAfter <= 0 {
		errs = append(errs, errors.New("shard.seq_hole_sweep_interval and shard.seq_hole_after must be positive"))
	}
	if r := c.Shard.RouteRepair; r.Interval <= 0 || r.ReconcileInterval <= 0 || r.Batch <= 0 || r.FallbackLimit <= 0 ||
		r.RebuildBatch <= 0 || r.ReconcileSample <= 0 || r.ReconcileDeep < 0 || r.ReconcileMonths <= 0 {
		errs = append(errs, errors.New("shard.route_repair intervals and sizes must be positive, reconcile_deep not negative"))
	}
	errs = append(errs, Listener("http", c.HTTP.Addr, c.HTTP.Public), Listener("tcp", c.TCP.Addr, c.TCP.Public), c.HTTP.validateAdmin())
	errs = append(errs, c.Archive.validate(), c.Uploads.validateStore(), c.Search.validate(), c.Shutdown.validate(), c.Migration.validate(), c.MySQL.TLS.validate("mysql"), c.Redis.TLS.validate("redis"), c.Redis.Sentinel.validate())
	return errors.Join(errs...)
}

// validateAdmin checks admin_addr like addr, and that it is a listener of its own.
func (h HTTP) validateAdmin() error {
	switch {
	case h.AdminAddr == "":
		return nil
	case h.AdminAddr == h.Addr:
		return errors.New("http.admin_addr must differ from http.addr")
	}
	if err := Listener("http", h.AdminAddr, h.Public); err != nil {
		return fmt.Errorf("http.admin_addr: %w", err)
	}
	return nil
}

func (a Archive) validate() error {
	var errs []error
	switch a.Store {
	case "fs":
		if a.Dir == "" {
			errs = append(errs, errors.New("archive.dir is required with store fs"))
		}
	case "s3":
		errs = append(errs, a.S3.validate("archive"))
	default:
		errs = append(errs, errors.New("archive.store must be fs or s3"))
	}
	if a.ChunkRows <= 0 || a.ManifestCache <= 0 || a.ChunkCache <= 0 || a.StateTTL <= 0 || a.RetentionInterval < 0 {
		errs = append(errs, errors.New("archive chunk_rows, caches and state_ttl must be positive, retention_interval not negative"))
	}
	return errors.Join(errs...)
}

func (s Search) validate() error {
	if s.Dir == "" || s.Queue <= 0 || s.Writers <= 0 {
		return errors.New("search.dir, a positive search.queue and a positive search.writers are required")
	}
	return nil
}

// TenantNames lists the configured tenants.
func (c Config) TenantNames() []string {
	out := make([]string, len(c.Tenants))
	for i, t := range c.Tenants {
		out[i] = t.Name
	}
	return out
}

// DatabaseName is the tenant's database, imd_<name> unless configured.
func (t Tenant) DatabaseName() string {
	if t.Database != "" {
		return t.Database
	}
	return "imd_" + t.Name
}
