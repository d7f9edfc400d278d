package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/jwt"
	"github.com/imdhq/imd/adapters/localfs"
	"github.com/imdhq/imd/adapters/mysql"
	"github.com/imdhq/imd/adapters/ratelimit"
	redisadapter "github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/adapters/s3blob"
	"github.com/imdhq/imd/adapters/snowflake"
	"github.com/imdhq/imd/core/admin"
	"github.com/imdhq/imd/core/authn"
	"github.com/imdhq/imd/core/conversation"
	"github.com/imdhq/imd/core/dailystats"
	"github.com/imdhq/imd/core/deliver"
	"github.com/imdhq/imd/core/directory"
	"github.com/imdhq/imd/core/history"
	"github.com/imdhq/imd/core/inbox"
	"github.com/imdhq/imd/core/membership"
	"github.com/imdhq/imd/core/read"
	"github.com/imdhq/imd/core/reports"
	"github.com/imdhq/imd/core/routerepair"
	"github.com/imdhq/imd/core/send"
	"github.com/imdhq/imd/core/shardmanager"
	"github.com/imdhq/imd/core/tenant"
	"github.com/imdhq/imd/core/tenants"
	"github.com/imdhq/imd/core/uploads"
	"github.com/imdhq/imd/ports"
)

// Social provides the social graph, the tenant registry, authentication with revocation,
// uploads and reports (issue 6), and loads the provisioned tenants at start, before the
// transports start the tenants' workers.
func Social() fx.Option {
	return fx.Options(
		fx.Provide(
			func(c *mysql.Cluster) ports.Profiles { return mysql.NewDirectory(c) },
			func(c *mysql.Cluster) ports.Friends { return mysql.NewDirectory(c) },
			func(c *mysql.Cluster) ports.Blocks { return mysql.NewDirectory(c) },
			func(c *mysql.Cluster) ports.Groups { return mysql.NewDirectory(c) },
			func(c *mysql.Cluster) ports.SendRules { return mysql.NewDirectory(c) },
			func(c *mysql.Cluster) ports.Reports { return mysql.NewReports(c) },
			func(c *mysql.Cluster) *mysql.Summaries { return mysql.NewSummaries(c) },
			func(s *mysql.Summaries) ports.Summaries { return s },
			func(c rueidis.Client) ports.DialogRemover { return redisadapter.NewDialogStore(c) },
			newDailyStats,
			fx.Annotate(func(c *dailystats.Counter) ports.CommitListener { return c }, fx.ResultTags(`group:"commit_listeners"`)),
			func(c *mysql.Cluster, cfg config.Config) *mysql.TenantRegistry {
				return mysql.NewTenantRegistry(c, cfg.Registry.Database)
			},
			func(c *mysql.Cluster) ports.TokenRevocations { return mysql.NewRevocations(c) },
			func(c rueidis.Client) ports.RevocationCache { return redisadapter.NewRevocationCache(c) },
			func(cfg config.Config) ports.TokenInspector { return jwt.New([]byte(cfg.TokenSecret)) },
			newObjectStore,
			newResolver,
			newDirectory,
			newTenantRuntime,
			newRegistry,
			newAuthn,
			func(a *authn.Service) ports.Authenticator { return a },
			newUploads,
			newReports,
			newSocialHTTP,
		),
		fx.Invoke(loadTenants, runDailyStats),
	)
}

// dailyStatsFlush is how often the daily summary receives the counts summed since the last
// flush: what a crash may lose, and how far the summary trails.
const dailyStatsFlush = 5 * time.Second

func newDailyStats(s *mysql.Summaries, log *slog.Logger) *dailystats.Counter {
	return dailystats.New(s, log)
}

// runDailyStats flushes the daily counts on a ticker and once more at stop. It is invoked
// before the transports, so it stops after them: no send is counted after the last flush.
func runDailyStats(lc fx.Lifecycle, c *dailystats.Counter) {
	var cancel context.CancelFunc
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			var ctx context.Context
			ctx, cancel = context.WithCancel(context.Background())
			go func() {
				defer close(done)
				c.Run(ctx, dailyStatsFlush)
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			cancel()
			<-done
			return c.Flush(ctx)
		},
	})
}

// httpRateLimits turns the rate_limit section into the client API's budgets.
func httpRateLimits(r config.RateLimit) httpapi.ClientRateLimits {
	return httpapi.ClientRateLimits{
		User: ratelimit.Rate{Count: r.HTTPPerSecond, Per: time.Second},
		IP:   ratelimit.Rate{Count: r.PerIP.HTTPPerSecond, Per: time.Second},
	}
}

func newResolver(cfg config.Config, d ports.Directory, r ports.SendRules, ids ports.IDGenerator, m *membership.Cache, c ports.Clock) *conversation.Resolver {
	graph := struct {
		ports.Directory
		ports.SendRules
	}{d, r}
	return conversation.NewResolver(graph, ids, m,
		conversation.WithClock(c), conversation.WithRulesTTL(memberCacheTTL),
		conversation.WithSystemAccounts(cfg.Message.SystemAccounts))
}

type directoryParams struct {
	fx.In
	Directory ports.Directory
	Profiles  ports.Profiles
	Friends   ports.Friends
	Blocks    ports.Blocks
	Groups    ports.Groups
	Resolver  *conversation.Resolver
	IDs       ports.IDGenerator
	Clock     ports.Clock
	// The inbox's mailer stores and pushes the friend and member events.
	Mailer *inbox.Mailer `optional:"true"`
	// The send path writes group events (mute-all) into group topics.
	Send    *send.Service
	Dialogs ports.DialogRemover
	Log     *slog.Logger
}

func newDirectory(p directoryParams) *directory.Service {
	d := directory.Deps{
		Directory: p.Directory, Profiles: p.Profiles, Friends: p.Friends, Blocks: p.Blocks, Groups: p.Groups,
		Resolver: p.Resolver, IDs: p.IDs, Clock: p.Clock, Topics: p.Send, Dialogs: p.Dialogs, Log: p.Log,
	}
	if p.Mailer != nil {
		d.Events = p.Mailer
	}
	return directory.New(d)
}

func newRegistry(cfg config.Config, store *mysql.TenantRegistry, rt *tenantRuntime, c ports.Clock, log *slog.Logger) (*tenants.Registry, error) {
	configured := make([]tenant.Info, len(cfg.Tenants))
	for i, t := range cfg.Tenants {
		configured[i] = tenant.Info{Name: t.Name, Database: t.DatabaseName(), DSN: t.DSN}
	}
	return tenants.New(tenants.Config{Configured: configured, Reserved: []string{cfg.Registry.Database}},
		tenants.Deps{Store: store, Activate: rt.activate, Clock: c, Log: log})
}

// revocationCacheTTL is how long Redis keeps a token check's answer: a revocation overwrites it
// at once, so this bounds only a revocation whose cache write failed (and was refused with 50301).
const revocationCacheTTL = time.Minute

func newAuthn(i ports.TokenInspector, r ports.TokenRevocations, cache ports.RevocationCache, reg *tenants.Registry, c ports.Clock) *authn.Service {
	return authn.New(authn.Deps{
		Tokens: i, Revocations: r, Cache: cache, CacheTTL: revocationCacheTTL, Tenants: reg.Known, Clock: c,
	}, admin.MaxTokenTTL)
}

// mediaStores are where uploads go: the presigner of upload and download URLs, and the
// /files/ handler of the HTTP listener when the store is the local directory (nil for S3).
type mediaStores struct {
	signer ports.ObjectStore
	files  httpapi.FileStore
}

// newObjectStore is the uploads store: an S3-compatible bucket, or the local directory
// (default) whose URL secret is derived from the token secret unless configured, so a dev
// setup needs no extra key.
func newObjectStore(cfg config.Config) (mediaStores, error) {
	u := cfg.Uploads
	if u.Store == "s3" {
		s, err := s3blob.New(s3Config(u.S3))
		return mediaStores{signer: s}, err
	}
	secret := []byte(u.Secret)
	if len(secret) == 0 {
		m := hmac.New(sha256.New, []byte(cfg.TokenSecret))
		m.Write([]byte("imd uploads"))
		secret = m.Sum(nil)
	}
	base := u.BaseURL
	if base == "" {
		base = "http://" + cfg.HTTP.Addr
	}
	s, err := localfs.New(localfs.Config{Dir: u.Dir, BaseURL: base, Secret: secret})
	if err != nil {
		return mediaStores{}, err
	}
	return mediaStores{signer: s, files: s}, nil
}

func newUploads(cfg config.Config, m mediaStores, c ports.Clock) *uploads.Service {
	return uploads.New(uploads.Config{MaxSize: cfg.Uploads.MaxSize, URLTTL: cfg.Uploads.URLTTL}, uploads.Deps{Store: m.signer, Clock: c})
}

func newReports(s ports.Reports, h *history.Service, ids ports.IDGenerator, c ports.Clock) *reports.Service {
	return reports.New(reports.Deps{Store: s, History: h, IDs: ids, Clock: c})
}

type socialHTTPParams struct {
	fx.In
	Auth      *authn.Service
	Directory *directory.Service
	Tenants   *tenants.Registry
	Send      *send.Service
	Uploads   *uploads.Service
	Reports   *reports.Service
	Media     mediaStores
	Inbox     *inbox.Service `optional:"true"`
	Read      *read.Service  `optional:"true"`
}

func newSocialHTTP(p socialHTTPParams) httpapi.SocialDeps {
	d := httpapi.SocialDeps{
		Auth: p.Auth, Directory: p.Directory, Tenants: p.Tenants, Send: p.Send, Uploads: p.Uploads,
		Reports: p.Reports, Files: p.Media.files,
	}
	if p.Inbox != nil {
		d.Dialogs, d.Settings = p.Inbox, p.Inbox
	}
	if p.Read != nil {
		d.Reads = p.Read
	}
	return d
}

// loadTenants opens the tenant registry and readies the storage of the provisioned tenants it
// lists, after manageStorage readied the configured ones; the transports then start every
// known tenant's workers.
func loadTenants(lc fx.Lifecycle, store *mysql.TenantRegistry, reg *tenants.Registry, rt *tenantRuntime) {
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := store.Open(ctx); err != nil {
				return err
			}
			if err := reg.Load(ctx); err != nil {
				return err
			}
			for _, t := range reg.List() {
				if t.Source != tenant.Provisioned {
					continue
				}
				if err := rt.readyStorage(ctx, t); err != nil {
					return err
				}
			}
			return nil
		},
		OnStop: func(context.Context) error { return store.Close() },
	})
}

// runTenants starts the registry's refresh, so tenants other nodes provision get served here
// too, and stops the work of every tenant that appeared after start. It is invoked after the
// transports, so it starts last and stops first.
func runTenants(lc fx.Lifecycle, cfg config.Config, reg *tenants.Registry, rt *tenantRuntime) {
	var cancel context.CancelFunc
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			var ctx context.Context
			ctx, cancel = context.WithCancel(context.Background())
			if err := rt.start(ctx); err != nil {
				cancel()
				return err
			}
			go func() {
				defer close(done)
				reg.Run(ctx, cfg.Registry.RefreshInterval)
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			cancel()
			<-done
			return rt.stop(ctx)
		},
	})
}

// workersFactory builds a deliver worker pool like the one of the configured tenants.
type workersFactory func() *deliver.Workers

func newWorkersFactory(p deliverParams) workersFactory {
	return func() *deliver.Workers { return newDeliver(p) }
}

// tenantRuntime runs what a tenant that appears after start needs on this node: its storage,
// its month tables, and its shard, repair and deliver loops.
type tenantRuntime struct {
	cfg     config.Config
	cluster *mysql.Cluster
	shards  *mysql.ShardStore
	ids     *snowflake.Generator
	manager *shardmanager.Manager
	repair  *routerepair.Service
	workers workersFactory
	log     *slog.Logger

	mu      sync.Mutex
	ctx     context.Context // set by start; nil before
	loops   sync.WaitGroup
	pools   []*deliver.Workers
	started map[string]bool
	pending []string // activated before start
}

type tenantRuntimeParams struct {
	fx.In
	Cfg     config.Config
	Cluster *mysql.Cluster
	Shards  *mysql.ShardStore
	IDs     *snowflake.Generator
	Manager *shardmanager.Manager
	Repair  *routerepair.Service
	Deliver deliverParams
	Log     *slog.Logger
}

func newTenantRuntime(p tenantRuntimeParams) *tenantRuntime {
	return &tenantRuntime{
		cfg: p.Cfg, cluster: p.Cluster, shards: p.Shards, ids: p.IDs, manager: p.Manager, repair: p.Repair,
		workers: newWorkersFactory(p.Deliver), log: p.Log, started: make(map[string]bool),
	}
}

// readyStorage provisions the tenant's database (idempotent) and refuses a clock behind its
// newest msg_id, like manageStorage does for configured tenants (DESIGN §1).
func (rt *tenantRuntime) readyStorage(ctx context.Context, t tenant.Info) error {
	if err := rt.cluster.Provision(ctx, t.Name, t.Database, t.DSN); err != nil {
		return fmt.Errorf("provision tenant %s: %w", t.Name, err)
	}
	last, err := rt.shards.MaxMessageID(ctx, t.Name)
	if err != nil {
		return fmt.Errorf("newest msg_id of %s: %w", t.Name, err)
	}
	if err := rt.ids.CheckClock(last); err != nil {
		return fmt.Errorf("tenant %s: %w", t.Name, err)
	}
	rt.log.InfoContext(ctx, "tenant ready", "tenant", t.Name, "database", t.Database)
	return nil
}

// activate is the registry's Activator: storage, first month tables, then the loops. Each
// step is idempotent and the loops start once per tenant, so a retried provisioning is safe.
func (rt *tenantRuntime) activate(ctx context.Context, t tenant.Info) error {
	if err := rt.readyStorage(ctx, t); err != nil {
		return err
	}
	if err := rt.manager.Ensure(ctx, t.Name); err != nil {
		return fmt.Errorf("month tables of %s: %w", t.Name, err)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.started[t.Name] {
		return nil
	}
	if rt.ctx == nil {
		// Provisioned between the HTTP listener's start and ours: launched by start.
		rt.pending = append(rt.pending, t.Name)
		return nil
	}
	return rt.launch(t.Name)
}

// launch starts the tenant's deliver pool and loops; the caller holds rt.mu.
func (rt *tenantRuntime) launch(name string) error {
	pool := rt.workers()
	if err := pool.Start(rt.ctx, []string{name}); err != nil {
		return fmt.Errorf("deliver workers of %s: %w", name, err)
	}
	rt.pools = append(rt.pools, pool)
	one := []string{name}
	rt.loops.Go(func() { rt.manager.Run(rt.ctx, one, rt.cfg.Shard.CheckInterval) })
	rt.loops.Go(func() { rt.repair.Run(rt.ctx, one) })
	rt.started[name] = true
	return nil
}

// start lets activate launch loops, which end with ctx, and launches those it held back.
func (rt *tenantRuntime) start(ctx context.Context) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.ctx = ctx
	for _, name := range rt.pending {
		if err := rt.launch(name); err != nil {
			return err
		}
	}
	rt.pending = nil
	return nil
}

// stop waits for the loops (their ctx is cancelled) and stops the deliver pools.
func (rt *tenantRuntime) stop(ctx context.Context) error {
	rt.loops.Wait()
	rt.mu.Lock()
	pools := rt.pools
	rt.mu.Unlock()
	for _, p := range pools {
		if err := p.Stop(ctx); err != nil {
			return err
		}
	}
	return nil
}
