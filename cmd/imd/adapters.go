package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/bleveindex"
	"github.com/imdhq/imd/adapters/blobfs"
	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/adapters/fxdeps"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/jwt"
	"github.com/imdhq/imd/adapters/localfs"
	"github.com/imdhq/imd/adapters/mysql"
	"github.com/imdhq/imd/adapters/prometheus"
	"github.com/imdhq/imd/adapters/push"
	redisadapter "github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/adapters/s3blob"
	"github.com/imdhq/imd/adapters/snowflake"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/store/dualread"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/ports"
)

// baseEditor is the store's message editor before dual read and archiving wrap it.
type baseEditor struct{ ports.MessageEditor }

// Adapters provides every port from MySQL, Redis, sonyflake, JWT, Prometheus, Bleve and the
// blob stores, and opens them in the start order of seed 003 §18 (MySQL, Redis, ID); each
// closes at stop after everything built on it has stopped. Tests replace it with the memory
// fakes (app_test.go) and keep the rest.
func Adapters(cfg config.Config) fx.Option {
	return fx.Options(
		fx.Provide(
			fx.Annotate(openMySQL, fx.As(fx.Self()), fx.As(new(ports.TenantStorage)), fx.OnStop((*mysql.Cluster).Close)),
			fx.Annotate(func(c *mysql.Cluster, m ports.Metrics) *mysql.MessageStore {
				return mysql.NewMessageStore(c, mysql.MessageStoreOptions{DedupTTL: time.Duration(cfg.Shard.DedupRetentionDays) * 24 * time.Hour, Metrics: m})
			}, fx.OnStop((*mysql.MessageStore).Close), fx.As(fx.Self()), fx.As(new(ports.MessageStore)), fx.As(new(ports.QueuedMarks)),
				fx.As(new(ports.SeqHoles)), fx.As(new(ports.MessageSearch)), fx.As(new(ports.MessageFinder))),
			fxdeps.As(mysql.NewDirectory, new(ports.Directory), new(ports.GroupOwners), new(ports.Profiles), new(ports.Friends),
				new(ports.Blocks), new(ports.Groups), new(ports.SendRules), new(conversation.Graph)),
			func(c *mysql.Cluster) baseEditor { return baseEditor{mysql.NewMessageEditor(c)} },
			fxdeps.As(mysql.NewDeleteLog, new(ports.DeleteLog), new(ports.HiddenRanges)),
			fxdeps.As(mysql.NewShardStore, new(ports.ShardStore), new(ports.IDWatermark)),
			fxdeps.As(mysql.NewReadStore, new(ports.ReadStore)),
			fxdeps.As(mysql.NewMailbox, new(ports.Mailbox)),
			fxdeps.As(mysql.NewRouteMirror, new(ports.RouteMirror)),
			fxdeps.As(mysql.NewHousekeeping, new(ports.ShardHousekeeping)),
			fxdeps.As(mysql.NewReports, new(ports.Reports)),
			fxdeps.As(mysql.NewSummaries, new(ports.Summaries), new(ports.DailyCounter)),
			fxdeps.As(mysql.NewRevocations, new(ports.TokenRevocations)),
			// The registry's database is opened at start, before the tenants are loaded.
			fx.Annotate(func(c *mysql.Cluster) *mysql.TenantRegistry { return mysql.NewTenantRegistry(c, cfg.Registry.Database) },
				fx.As(fx.Self()), fx.As(new(ports.TenantStore)), fx.OnStart((*mysql.TenantRegistry).Open), fx.OnStop((*mysql.TenantRegistry).Close)),
			fxdeps.As(mysql.NewMonthRows, new(ports.MonthRows), new(ports.MonthCatalog)),
			fxdeps.As(mysql.NewReferences, new(ports.Favorites), new(ports.GroupFiles), new(ports.References)),
			fxdeps.As(mysql.NewLegacy, new(ports.LegacyMessages)),
			fxdeps.As(mysql.NewMigrations, new(ports.MigrationStore), new(dualread.Copier)),

			fx.Annotate(openRedis, fx.OnStop(rueidis.Client.Close)),
			func(c rueidis.Client) httpapi.ReadyCheck { return redisadapter.Ready(c) },
			fxdeps.As(redisadapter.NewNodes, new(ports.NodeLeases), new(ports.Presence), new(ports.NodeChannel), new(ports.NodeInspector)),
			fxdeps.As(func(c rueidis.Client) *redisadapter.SeqAllocator { return redisadapter.NewSeqAllocator(c, 0) },
				new(ports.SeqAllocator), new(ports.PendingSeqs)),
			fxdeps.As(redisadapter.NewMonthState, new(ports.MonthState)),
			fxdeps.As(redisadapter.NewRouteCache, new(ports.RouteCache), new(ports.RouteFiller), new(ports.RoutePurger)),
			fxdeps.As(func(c rueidis.Client) *redisadapter.HotCache {
				return redisadapter.NewHotCache(c, redisadapter.HotCacheOptions{})
			}, fx.Self(), new(ports.HotCache)),
			fxdeps.As(func(c rueidis.Client) (*redisadapter.DeliverQueue, error) {
				return redisadapter.NewDeliverQueue(c).WithPartitions(cfg.Deliver.Partitions)
			}, fx.Self(), new(ports.DeliverQueue)),
			fxdeps.As(redisadapter.NewCommitFollowUp, new(ports.CommitFollowUp)),
			fxdeps.As(redisadapter.NewDialogStore, new(ports.DialogStore), new(ports.DialogRemover)),
			fxdeps.As(redisadapter.NewRepairQueue, new(ports.RouteRepairQueue)),
			fxdeps.As(redisadapter.NewCompensationList, new(ports.CompensationList)),
			fxdeps.As(redisadapter.NewLocks, new(ports.Locks)),

			fxdeps.As(func() (*snowflake.Generator, error) { return snowflake.New(cfg.NodeID) }, new(ports.IDGenerator), new(runtime.ClockGuard)),
			fxdeps.Inject(runtime.NewReadyStorage),
			fxdeps.As(func() *jwt.Tokens { return jwt.New([]byte(cfg.TokenSecret)) }, new(ports.Tokens), new(ports.TokenInspector)),
			fxdeps.As(prometheus.New, fx.Self(), new(ports.Metrics), new(ports.CounterAdder)),
			func(m *prometheus.Metrics) http.Handler { return m.Handler() },
			func() ports.Clock { return systemClock{} },
			fx.Annotate(func() (*bleveindex.Index, error) { return bleveindex.New(cfg.Search.Dir) },
				fx.As(fx.Self()), fx.As(new(ports.SearchIndex)), fx.OnStop((*bleveindex.Index).Close)),
			newBlobStore,
			newObjectStore,
			newPushNotifier,
		),
		// Opened in this order at start whoever needs them first.
		fx.Invoke(func(*mysql.Cluster, *mysql.MessageStore, rueidis.Client, ports.IDGenerator) {}),
	)
}

func openMySQL(cfg config.Config) (*mysql.Cluster, error) {
	certs, err := cfg.MySQL.TLS.Build()
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	return mysql.Open(cfg.MySQL.DSN, cfg.MySQL.MaxOpenConns, mysql.WithTLS(certs))
}

func openRedis(cfg config.Config) (rueidis.Client, error) {
	certs, err := cfg.Redis.TLS.Build()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return redisadapter.Open(ctx, cfg.Redis.Addr, redisadapter.WithAuth(cfg.Redis.Username, cfg.Redis.Password), redisadapter.WithTLS(certs))
}

// newBlobStore is the archive's home: a local directory (default) or an S3-compatible bucket
// (a bucket of the file has the S3 adapter's fields, so it converts).
func newBlobStore(cfg config.Config) (ports.BlobStore, error) {
	a := cfg.Archive
	if a.Store == "s3" {
		return s3blob.New(s3blob.Config(a.S3))
	}
	return blobfs.New(a.Dir)
}

// newObjectStore is the uploads store, the presigner of upload and download URLs: an
// S3-compatible bucket, or the local directory (default), which is also the /files/ handler of
// the HTTP listener (nil for S3).
func newObjectStore(cfg config.Config) (ports.ObjectStore, httpapi.FileStore, error) {
	u := cfg.Uploads
	if u.Store == "s3" {
		s, err := s3blob.New(s3blob.Config(u.S3))
		return s, nil, err
	}
	s, err := localfs.New(localfs.Config{Dir: u.Dir, BaseURL: cfg.UploadsBaseURL(), Secret: cfg.URLSecret()})
	return s, s, err
}

// newPushNotifier is the webhook when one is configured, else Noop. The webhook's queue is
// flushed at stop, after the deliver workers (which feed it) have stopped.
func newPushNotifier(lc fx.Lifecycle, cfg config.Config, met ports.Metrics, log *slog.Logger) (ports.PushNotifier, error) {
	if cfg.Push.Webhook == "" {
		return push.Noop{}, nil
	}
	w, err := push.NewWebhook(push.WebhookConfig{URL: cfg.Push.Webhook, Timeout: cfg.Push.Timeout, Queue: cfg.Push.Queue}, met, log)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(w.Close))
	return w, nil
}
