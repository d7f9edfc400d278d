package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/fx"

	"imd/adapters/config"
	httpapi "imd/adapters/http"
	"imd/adapters/jwt"
	"imd/adapters/mysql"
	"imd/adapters/prometheus"
	redisadapter "imd/adapters/redis"
	"imd/adapters/snowflake"
	tcpserver "imd/adapters/tcp/server"
	"imd/core/admin"
	"imd/core/conversation"
	"imd/core/deliver"
	"imd/core/history"
	"imd/core/membership"
	"imd/core/send"
	"imd/core/shardmanager"
	"imd/ports"
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
		Core(),
		Transports(),
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
			func() (*mysql.Cluster, error) { return mysql.Open(cfg.MySQL.DSN, cfg.MySQL.MaxOpenConns) },
			func(c *mysql.Cluster) *mysql.MessageStore { return mysql.NewMessageStore(c, mysql.MessageStoreOptions{}) },
			fx.Annotate(mysql.NewDirectory, fx.As(new(ports.Directory))),
			mysql.NewShardStore,
			func(s *mysql.ShardStore) ports.ShardStore { return s },
			func(s *mysql.MessageStore) ports.MessageStore { return s },
			openRedis,
			func(c rueidis.Client) ports.SeqAllocator { return redisadapter.NewSeqAllocator(c, 0) },
			func(c rueidis.Client) ports.MonthState { return redisadapter.NewMonthState(c) },
			func(c rueidis.Client) ports.RouteCache { return redisadapter.NewRouteCache(c) },
			func(c rueidis.Client) ports.DeliverQueue { return redisadapter.NewDeliverQueue(c) },
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

// openRedis connects to Redis; the client closes last but one, after everything using it.
func openRedis(lc fx.Lifecycle, cfg config.Config) (rueidis.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redisadapter.Open(ctx, cfg.Redis.Addr)
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
			conversation.NewResolver,
			func(cfg config.Config, s ports.ShardStore, m ports.MonthState, met ports.Metrics, log *slog.Logger) *shardmanager.Manager {
				return shardmanager.New(shardmanager.Config{SealingDays: cfg.Shard.SealingDays}, shardmanager.Deps{Store: s, Months: m, Metrics: met, Log: log})
			},
			newSend,
			func(st ports.MessageStore, r ports.RouteCache, m ports.MonthState, met ports.Metrics, res *conversation.Resolver, log *slog.Logger) *history.Service {
				return history.New(history.Deps{Store: st, Routes: r, Months: m, Metrics: met, Resolver: res, Log: log})
			},
			newAdmin,
		),
	)
}

type sendParams struct {
	fx.In
	Cfg      config.Config
	Seq      ports.SeqAllocator
	Store    ports.MessageStore
	Queue    ports.DeliverQueue
	Routes   ports.RouteCache
	IDs      ports.IDGenerator
	Clock    ports.Clock
	Metrics  ports.Metrics
	Resolver *conversation.Resolver
	Manager  *shardmanager.Manager
	Log      *slog.Logger
}

func newSend(p sendParams) *send.Service {
	return send.New(send.Deps{
		Seq: p.Seq, Store: p.Store, Queue: p.Queue, Routes: p.Routes, IDs: p.IDs, Clock: p.Clock,
		Metrics: p.Metrics, Resolver: p.Resolver, Log: p.Log, EnsureMonths: p.Manager.Ensure,
		MsgIDWindow: time.Duration(p.Cfg.Message.MsgIDExpireMS) * time.Millisecond,
	})
}

type adminParams struct {
	fx.In
	Cfg       config.Config
	Directory ports.Directory
	Tokens    ports.Tokens
	IDs       ports.IDGenerator
	Store     ports.MessageStore
	Routes    ports.RouteCache
	Shards    ports.ShardStore
	Manager   *shardmanager.Manager
	Members   *membership.Cache
}

func newAdmin(p adminParams) *admin.Service {
	names := p.Cfg.TenantNames()
	return admin.New(admin.Deps{
		Directory: p.Directory, Tokens: p.Tokens, IDs: p.IDs, Store: p.Store, Routes: p.Routes,
		Shards: p.Shards, Manager: p.Manager, Members: p.Members,
		Tenants: func(name string) bool { return slices.Contains(names, name) },
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
			newDeliver,
			newHTTP,
		),
		fx.Invoke(runServer),
	)
}

type tcpParams struct {
	fx.In
	Cfg     config.Config
	Tokens  ports.Tokens
	Send    *send.Service
	History *history.Service
	IDs     ports.IDGenerator
	Clock   ports.Clock
	Metrics ports.Metrics
	Log     *slog.Logger
}

func newTCP(p tcpParams) *tcpserver.Server {
	c := p.Cfg.TCP
	return tcpserver.New(tcpserver.Config{
		Addr: c.Addr, ProxyProtocol: c.ProxyProtocol, IdleTimeout: c.IdleTimeout, KeepAlive: c.KeepAlive,
		Multicore: c.Multicore, CompressMin: c.CompressMinSize, OutboundFrames: c.OutboundLimit,
		Workers: p.Cfg.TaskPool.Workers, Queue: p.Cfg.TaskPool.Queue, RequestTimeout: c.RequestTimeout,
	}, tcpserver.Deps{
		Tokens: p.Tokens, Send: p.Send, History: p.History, IDs: p.IDs, Clock: p.Clock, Metrics: p.Metrics,
	}, p.Log)
}

func newDeliver(cfg config.Config, q ports.DeliverQueue, p ports.Pusher, m *membership.Cache, met ports.Metrics, c ports.Clock, log *slog.Logger) *deliver.Workers {
	d := cfg.Deliver
	return deliver.New(deliver.Config{Workers: d.Workers, TakeTimeout: d.TakeTimeout, DoneTTL: d.DoneTTL, MaxAttempts: d.MaxAttempts},
		deliver.Deps{Queue: q, Pusher: p, Members: m, Metrics: met, Clock: c, Log: log})
}

func newHTTP(cfg config.Config, a *admin.Service, h *history.Service, m *prometheus.Metrics, ready readyCheck, log *slog.Logger) *httpapi.Server {
	return httpapi.New(httpapi.Config{Addr: cfg.HTTP.Addr, AdminKey: cfg.AdminKey},
		httpapi.Deps{Admin: a, History: h, Metrics: m.Handler(), Ready: ready}, log)
}

type serverParams struct {
	fx.In
	LC      fx.Lifecycle
	Cfg     config.Config
	Manager *shardmanager.Manager
	Workers *deliver.Workers
	HTTP    *httpapi.Server
	TCP     *tcpserver.Server
	Log     *slog.Logger
}

func runServer(p serverParams) {
	tenants := p.Cfg.TenantNames()
	var stopShards context.CancelFunc
	shardsDone := make(chan struct{})
	p.LC.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
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
			return nil
		},
		OnStop: func(context.Context) error {
			stopShards()
			<-shardsDone
			return nil
		},
	})
	p.LC.Append(fx.Hook{
		OnStart: func(ctx context.Context) error { return p.Workers.Start(ctx, tenants) },
		OnStop:  p.Workers.Stop,
	})
	p.LC.Append(fx.Hook{OnStart: p.HTTP.Start, OnStop: p.HTTP.Stop})
	p.LC.Append(fx.Hook{OnStart: p.TCP.Start, OnStop: p.TCP.Stop})
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
