package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/jwt"
	"github.com/imdhq/imd/adapters/mysql"
	"github.com/imdhq/imd/adapters/prometheus"
	"github.com/imdhq/imd/adapters/ratelimit"
	redisadapter "github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/adapters/snowflake"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/adapters/websocket"
	"github.com/imdhq/imd/core/admin"
	"github.com/imdhq/imd/core/archivereader"
	"github.com/imdhq/imd/core/conversation"
	"github.com/imdhq/imd/core/deliver"
	"github.com/imdhq/imd/core/directory"
	"github.com/imdhq/imd/core/history"
	"github.com/imdhq/imd/core/inbox"
	"github.com/imdhq/imd/core/inflight"
	"github.com/imdhq/imd/core/membership"
	"github.com/imdhq/imd/core/migration"
	"github.com/imdhq/imd/core/modify"
	"github.com/imdhq/imd/core/read"
	"github.com/imdhq/imd/core/routerepair"
	"github.com/imdhq/imd/core/send"
	"github.com/imdhq/imd/core/shardmanager"
	"github.com/imdhq/imd/core/tenants"
	"github.com/imdhq/imd/ports"
)

// memberCacheTTL bounds how stale a membership answer may be on another node; changes made
// through this node invalidate at once.
const memberCacheTTL = 5 * time.Second

// Options is the whole application: real adapters around the core, then the transports.
// Tests replace Adapters with fakes and keep the rest.
func Options(cfg config.Config, log *slog.Logger) fx.Option {
	return fx.Options(
		fx.Supply(cfg, log),
		Adapters(cfg),
		Social(),
		Core(),
		Archive(),
		Migration(cfg),
		Transports(),
		Browser(),
		Observe(),
		fx.Invoke(runTenants),
	)
}

// systemClock is the node clock; month decisions never use it (they use Redis TIME).
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Adapters provides every port from MySQL, Redis, sonyflake, JWT and Prometheus, and opens
// and closes them in the start order of seed 003 §18: MySQL, Redis, ID.
func Adapters(cfg config.Config) fx.Option {
	return fx.Options(
		fx.Provide(
			openMySQL,
			func(c *mysql.Cluster, m ports.Metrics) *mysql.MessageStore {
				return mysql.NewMessageStore(c, mysql.MessageStoreOptions{DedupTTL: time.Duration(cfg.Shard.DedupRetentionDays) * 24 * time.Hour, Metrics: m})
			},
			fx.Annotate(mysql.NewDirectory, fx.As(new(ports.Directory))),
			func(c *mysql.Cluster) ports.GroupOwners { return mysql.NewDirectory(c) },
			newMessageEditor, // migration.go: copy-on-change of legacy messages under dual read
			func(c *mysql.Cluster) ports.DeleteLog { return mysql.NewDeleteLog(c) },
			mysql.NewShardStore,
			func(s *mysql.ShardStore) ports.ShardStore { return s },
			func(s *mysql.MessageStore) ports.MessageStore { return s },
			func(s *mysql.MessageStore) ports.QueuedMarks { return s },
			openRedis,
			func(c rueidis.Client) ports.SeqAllocator { return redisadapter.NewSeqAllocator(c, 0) },
			func(c rueidis.Client) ports.MonthState { return redisadapter.NewMonthState(c) },
			func(c rueidis.Client) ports.RouteCache { return redisadapter.NewRouteCache(c) },
			func(c rueidis.Client) ports.RouteFiller { return redisadapter.NewRouteCache(c) },
			func(c rueidis.Client) ports.HotCache {
				return redisadapter.NewHotCache(c, redisadapter.HotCacheOptions{})
			},
			func(s *mysql.MessageStore) ports.MessageSearch { return s },
			func(c *mysql.Cluster) ports.HiddenRanges { return mysql.NewDeleteLog(c) },
			func(c rueidis.Client) (ports.DeliverQueue, error) {
				return redisadapter.NewDeliverQueue(c).WithPartitions(cfg.Deliver.Partitions)
			},
			deliverInspector,
			func(c rueidis.Client) ports.DialogStore { return redisadapter.NewDialogStore(c) },
			func(c *mysql.Cluster) ports.ReadStore { return mysql.NewReadStore(c) },
			func(c *mysql.Cluster) ports.Mailbox { return mysql.NewMailbox(c) },
			func(s *mysql.MessageStore) ports.MessageFinder { return s },
			newPushNotifier,
			func(c rueidis.Client) ports.RouteRepairQueue { return redisadapter.NewRepairQueue(c) },
			func(c rueidis.Client) ports.CompensationList { return redisadapter.NewCompensationList(c) },
			func(c rueidis.Client) ports.Locks { return redisadapter.NewLocks(c) },
			func(c *mysql.Cluster) ports.RouteMirror { return mysql.NewRouteMirror(c) },
			func(c *mysql.Cluster) ports.ShardHousekeeping { return mysql.NewHousekeeping(c) },
			func() (*snowflake.Generator, error) { return snowflake.New(cfg.NodeID) },
			func(g *snowflake.Generator) ports.IDGenerator { return g },
			func() ports.Tokens { return jwt.New([]byte(cfg.TokenSecret)) },
			prometheus.New,
			func(m *prometheus.Metrics) ports.Metrics { return m },
			func() ports.Clock { return systemClock{} },
			readiness,
		),
		fx.Invoke(manageStorage),
	)
}

func openMySQL(cfg config.Config) (*mysql.Cluster, error) {
	certs, err := cfg.MySQL.TLS.Build()
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	return mysql.Open(cfg.MySQL.DSN, cfg.MySQL.MaxOpenConns, mysql.WithTLS(certs))
}

// openRedis connects to Redis; the client closes last but one, after everything using it.
func openRedis(lc fx.Lifecycle, cfg config.Config) (rueidis.Client, error) {
	certs, err := cfg.Redis.TLS.Build()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redisadapter.Open(ctx, cfg.Redis.Addr, redisadapter.WithAuth(cfg.Redis.Username, cfg.Redis.Password), redisadapter.WithTLS(certs))
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", cfg.Redis.Addr, err)
	}
	lc.Append(fx.StopHook(c.Close))
	return c, nil
}

// manageStorage provisions every tenant database (schema migrations) at start and closes the
// writers, then the pools, at stop.
func manageStorage(lc fx.Lifecycle, cfg config.Config, cluster *mysql.Cluster, store *mysql.MessageStore,
	shards *mysql.ShardStore, ids *snowflake.Generator, log *slog.Logger) {
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			for _, t := range cfg.Tenants {
				if err := cluster.Provision(ctx, t.Name, t.DatabaseName()); err != nil {
					return fmt.Errorf("provision tenant %s: %w", t.Name, err)
				}
				// Refuse to issue ids that would sort before stored ones (DESIGN §1).
				last, err := shards.MaxMessageID(ctx, t.Name)
				if err != nil {
					return fmt.Errorf("newest msg_id of %s: %w", t.Name, err)
				}
				if err := ids.CheckClock(last); err != nil {
					return fmt.Errorf("tenant %s: %w", t.Name, err)
				}
				log.Info("tenant ready", "tenant", t.Name, "database", t.DatabaseName())
			}
			return nil
		},
		OnStop: func(context.Context) error {
			return cluster.Close()
		},
	})
	lc.Append(fx.StopHook(store.Close))
}

// readyCheck reports whether the dependencies answer, for /readyz.
type readyCheck func(ctx context.Context) error

func readiness(c rueidis.Client) readyCheck {
	return func(ctx context.Context) error {
		return c.Do(ctx, c.B().Ping().Build()).Error()
	}
}

// Core builds the use cases over the ports.
func Core() fx.Option {
	return fx.Options(
		fx.Provide(
			func(d ports.Directory, c ports.Clock) *membership.Cache { return membership.New(d, c, memberCacheTTL) },
			newShardManager,
			newRouteRepair,
			func(s *routerepair.Service) ports.RouteRepairs { return s },
			newSend,
			newHistory,
			newAdmin,
			newModify,
			newInbox,
			newMailer,
			newRead,
			newMissed,
			// One per node: the send path and the deliver consumers of this process share it.
			inflight.New,
		),
	)
}

type shardManagerParams struct {
	fx.In
	Cfg          config.Config
	Store        ports.ShardStore
	Months       ports.MonthState
	Locks        ports.Locks
	Repair       *routerepair.Service
	Compensation ports.CompensationList
	Housekeeping ports.ShardHousekeeping
	Metrics      ports.Metrics
	Log          *slog.Logger
}

func newShardManager(p shardManagerParams) *shardmanager.Manager {
	c := p.Cfg.Shard
	return shardmanager.New(shardmanager.Config{SealingDays: c.SealingDays, LockTTL: c.LockTTL, DedupPurgeBatch: c.DedupPurgeBatch},
		shardmanager.Deps{
			Store: p.Store, Months: p.Months, Locks: p.Locks, Repairs: p.Repair, Compensation: p.Compensation,
			Housekeeping: p.Housekeeping, Metrics: p.Metrics, Log: p.Log,
		})
}

type routeRepairParams struct {
	fx.In
	Cfg     config.Config
	Queue   ports.RouteRepairQueue
	Store   ports.MessageStore
	Mirror  ports.RouteMirror
	Routes  ports.RouteCache
	Months  ports.MonthState
	Metrics ports.Metrics
	Log     *slog.Logger
}

func newRouteRepair(p routeRepairParams) *routerepair.Service {
	c := p.Cfg.Shard.RouteRepair
	return routerepair.New(routerepair.Config{
		Interval: c.Interval, Batch: c.Batch, FallbackLimit: c.FallbackLimit, RebuildBatch: c.RebuildBatch,
		ReconcileInterval: c.ReconcileInterval, ReconcileSample: c.ReconcileSample, ReconcileDeep: c.ReconcileDeep,
		ReconcileMonths: c.ReconcileMonths,
	}, routerepair.Deps{
		Queue: p.Queue, Store: p.Store, Mirror: p.Mirror, Routes: p.Routes, Months: p.Months, Metrics: p.Metrics, Log: p.Log,
	})
}

type sendParams struct {
	fx.In
	Cfg      config.Config
	Seq      ports.SeqAllocator
	Store    ports.MessageStore
	Queue    ports.DeliverQueue
	Queued   ports.QueuedMarks
	Routes   ports.RouteCache
	IDs      ports.IDGenerator
	Clock    ports.Clock
	Metrics  ports.Metrics
	Resolver *conversation.Resolver
	Manager  *shardmanager.Manager
	Log      *slog.Logger
	Hot      ports.HotCache
	Repairs  ports.RouteRepairs
	Comp     ports.CompensationList
	// Listeners hear of stored messages after COMMIT (archive.go: search and file indexes).
	Listeners []ports.CommitListener `group:"commit_listeners"`
	InFlight  *inflight.Sends
}

func newSend(p sendParams) *send.Service {
	return send.New(send.Deps{
		Seq: p.Seq, Store: p.Store, Queue: p.Queue, Queued: p.Queued, Routes: p.Routes, IDs: p.IDs, Clock: p.Clock,
		Metrics: p.Metrics, Resolver: p.Resolver, Log: p.Log, EnsureMonths: p.Manager.Ensure,
		ReconcileMonths: p.Manager.Reconcile, Floors: p.Manager.Floors(),
		MsgIDWindow: time.Duration(p.Cfg.Message.MsgIDExpireMS) * time.Millisecond,
		Hot:         p.Hot, Repairs: p.Repairs, Compensation: p.Comp, Listeners: p.Listeners, InFlight: p.InFlight,
	})
}

type historyParams struct {
	fx.In
	Store    ports.MessageStore
	Routes   ports.RouteFiller
	Months   ports.MonthState
	Metrics  ports.Metrics
	Resolver *conversation.Resolver
	Log      *slog.Logger
	Hot      ports.HotCache
	Hidden   ports.HiddenRanges
	Search   ports.MessageSearch
	Repairs  ports.RouteRepairs `optional:"true"`
	// Archived reads archived months from the archive (archive.go).
	Archived *archivereader.Store `optional:"true"`
}

func newHistory(p historyParams) *history.Service {
	store, search := p.Store, p.Search
	if p.Archived != nil {
		store, search = p.Archived, p.Archived
	}
	return history.New(history.Deps{
		Store: store, Routes: p.Routes, Months: p.Months, Metrics: p.Metrics, Resolver: p.Resolver, Log: p.Log,
		Hot: p.Hot, Hidden: p.Hidden, Search: search, Repairs: p.Repairs,
	})
}

type adminParams struct {
	fx.In
	Directory ports.Directory
	Tokens    ports.Tokens
	Routes    *routerepair.Service
	Shards    ports.ShardStore
	Manager   *shardmanager.Manager
	Social    *directory.Service
	Summaries ports.Summaries
	Tenants   *tenants.Registry
	Rows      *mysql.MonthRows
}

func newAdmin(p adminParams) *admin.Service {
	return admin.New(admin.Deps{
		Directory: p.Directory, Tokens: p.Tokens, Routes: p.Routes,
		Shards: p.Shards, Manager: p.Manager, Social: p.Social, Summaries: p.Summaries, Tenants: p.Tenants.Known, Tables: p.Rows,
	})
}

type modifyParams struct {
	fx.In
	Cfg       config.Config
	Editor    ports.MessageEditor
	DeleteLog ports.DeleteLog
	Store     ports.MessageStore
	Owners    ports.GroupOwners
	HotCache  ports.HotCache `optional:"true"`
	History   *history.Service
	Send      *send.Service
	Resolver  *conversation.Resolver
	Clock     ports.Clock
	Metrics   ports.Metrics
	Log       *slog.Logger
}

func newModify(p modifyParams) *modify.Service {
	return modify.New(modify.Config{RecallWindow: p.Cfg.Message.RecallWindow}, modify.Deps{
		Editor: p.Editor, DeleteLog: p.DeleteLog, Store: p.Store, Owners: p.Owners, HotCache: p.HotCache,
		Locator: p.History, Events: p.Send, Resolver: p.Resolver, Clock: p.Clock, Metrics: p.Metrics, Log: p.Log,
	})
}

// Transports builds the TCP and HTTP listeners and the background workers, and registers their
// start/stop in seed 003 §18 order: shards ready → requeue + deliver workers → HTTP → TCP →
// ready. Stop runs backwards: not ready → TCP drained → HTTP → workers finish their job.
func Transports() fx.Option {
	return fx.Options(
		fx.Provide(
			newTCP,
			func(s *tcpserver.Server) ports.Pusher { return s },
			func() *latePusher { return &latePusher{} },
			func(l *latePusher) ports.DevicePusher { return l },
			newDeliver,
			newHTTP,
		),
		fx.Invoke(bindPusher, recordUnacked, runServer),
	)
}

type tcpParams struct {
	fx.In
	Cfg     config.Config
	Auth    ports.Authenticator
	Send    *send.Service
	History *history.Service
	Modify  *modify.Service
	Inbox   *inbox.Service
	Read    *read.Service
	IDs     ports.IDGenerator
	Clock   ports.Clock
	Metrics ports.Metrics
	Log     *slog.Logger
}

func newTCP(p tcpParams) (*tcpserver.Server, error) {
	c := p.Cfg.TCP
	var certs *tls.Config
	if c.TLS == "native" {
		var err error
		if certs, err = tcpserver.LoadTLS(c.CertFile, c.KeyFile); err != nil {
			return nil, err
		}
	}
	return tcpserver.New(tcpserver.Config{
		Addr: c.Addr, ProxyProtocol: c.ProxyProtocol, IdleTimeout: c.IdleTimeout, KeepAlive: c.KeepAlive,
		Multicore: c.Multicore, CompressMin: c.CompressMinSize, OutboundFrames: c.OutboundLimit,
		Workers: p.Cfg.TaskPool.Workers, Queue: p.Cfg.TaskPool.Queue, RequestTimeout: c.RequestTimeout,
		TLS: certs, HandshakeTimeout: c.HandshakeTimeout, PushAckTimeout: c.PushAckTimeout,
		RateLimits: tcpRateLimits(p.Cfg.RateLimit),
	}, tcpserver.Deps{
		Auth: p.Auth, Send: p.Send, History: p.History, Modify: p.Modify, Inbox: p.Inbox, Read: p.Read, IDs: p.IDs, Clock: p.Clock, Metrics: p.Metrics,
	}, p.Log), nil
}

// tcpRateLimits turns the rate_limit section into the listener's budgets.
func tcpRateLimits(r config.RateLimit) tcpserver.RateLimits {
	budgets := func(msgPerSec, authPerSec, inboxPerMin, syncPerMin, historyPerMin int) tcpserver.Budgets {
		return tcpserver.Budgets{
			Send:         ratelimit.Rate{Count: msgPerSec, Per: time.Second},
			Auth:         ratelimit.Rate{Count: authPerSec, Per: time.Second},
			SyncInbox:    ratelimit.Rate{Count: inboxPerMin, Per: time.Minute},
			SyncMessages: ratelimit.Rate{Count: syncPerMin, Per: time.Minute},
			History:      ratelimit.Rate{Count: historyPerMin, Per: time.Minute},
		}
	}
	ip := r.PerIP
	return tcpserver.RateLimits{
		Device: budgets(r.MessagePerSecond, r.AuthPerSecond, r.SyncInboxPerMinute, r.SyncMessagesPerMinute, r.HistoryPerMinute),
		IP:     budgets(ip.MessagePerSecond, ip.AuthPerSecond, ip.SyncInboxPerMinute, ip.SyncMessagesPerMinute, ip.HistoryPerMinute),
	}
}

// deliverInspector is the deliver queue's operator view; the Redis queue is one.
func deliverInspector(q ports.DeliverQueue) (ports.DeliverInspector, error) {
	in, ok := q.(ports.DeliverInspector)
	if !ok {
		return nil, fmt.Errorf("deliver queue %T cannot be inspected", q)
	}
	return in, nil
}

func newHTTP(cfg config.Config, a *admin.Service, h *history.Service, in *inbox.Service, sm *shardmanager.Manager, rr *routerepair.Service, m *prometheus.Metrics, ready readyCheck, tcp *tcpserver.Server, sd httpapi.SocialDeps, ah archiveHTTP, mig *migration.Service, dq ports.DeliverInspector, b httpapi.Browser, log *slog.Logger) *httpapi.Server {
	return httpapi.New(httpapi.Config{Addr: cfg.HTTP.Addr, AdminKey: cfg.AdminKey, RateLimits: httpRateLimits(cfg.RateLimit)},
		httpapi.Deps{Admin: a, History: h, Inbox: in, Metrics: m.Handler(), RequestMetrics: m, Ready: ready, Listeners: []func() error{tcp.Serving},
			Shards: httpapi.ShardOps{Manager: sm, Repair: rr}, Social: sd,
			Archive: ah.Archive, References: ah.References, Migration: mig, Delivery: dq, Browser: b}, log)
}

type serverParams struct {
	fx.In
	LC      fx.Lifecycle
	Cfg     config.Config
	Manager *shardmanager.Manager
	Repair  *routerepair.Service
	Workers *deliver.Workers
	HTTP    *httpapi.Server
	TCP     *tcpserver.Server
	WS      *websocket.Endpoint
	Tenants *tenants.Registry
	Log     *slog.Logger
	Exit    fx.Shutdowner
}

func runServer(p serverParams) {
	// The registry's tenants: the provisioned ones are loaded at start, so read them then.
	var tenants []string
	var stopShards context.CancelFunc
	shardsDone, repairDone := make(chan struct{}), make(chan struct{})
	p.LC.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			tenants = p.Tenants.Names()
			for _, t := range tenants {
				if err := p.Manager.Ensure(ctx, t); err != nil {
					return fmt.Errorf("month tables of %s: %w", t, err)
				}
			}
			var runCtx context.Context
			runCtx, stopShards = context.WithCancel(context.Background())
			go func() {
				defer close(shardsDone)
				p.Manager.Run(runCtx, tenants, p.Cfg.Shard.CheckInterval)
			}()
			// Route repairs, the tenant-wide rebuild when Redis lost the routes, reconciliation.
			go func() {
				defer close(repairDone)
				p.Repair.Run(runCtx, tenants)
			}()
			return nil
		},
		OnStop: func(context.Context) error {
			stopShards()
			<-shardsDone
			<-repairDone
			return nil
		},
	})
	p.LC.Append(fx.Hook{
		OnStart: func(ctx context.Context) error { return p.Workers.Start(ctx, tenants) },
		OnStop:  p.Workers.Stop,
	})
	p.LC.Append(fx.Hook{OnStart: p.HTTP.Start, OnStop: p.HTTP.Stop})
	p.LC.Append(fx.Hook{OnStart: p.TCP.Start, OnStop: p.TCP.Stop})
	// WebSocket clients are kicked before the TCP listener stops the dispatcher they share.
	p.LC.Append(fx.StopHook(p.WS.Stop))
	// A frame listener that stopped accepting ends the process (exit 1) for its supervisor to
	// restart; readiness has already dropped through TCP.Serving.
	watchDone := make(chan struct{})
	p.LC.Append(fx.StartStopHook(func() {
		go func() {
			select {
			case <-p.TCP.Lost():
				_ = p.Exit.Shutdown(fx.ExitCode(1))
			case <-watchDone:
			}
		}()
	}, func() { close(watchDone) }))
	p.LC.Append(fx.Hook{
		OnStart: func(context.Context) error { p.HTTP.SetReady(true); return nil },
		OnStop: func(context.Context) error {
			// Fail readiness first so the balancer stops sending new clients here.
			p.HTTP.SetReady(false)
			p.Log.Info("readiness withdrawn")
			return nil
		},
	})
}
