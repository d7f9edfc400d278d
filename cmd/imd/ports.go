package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/apns"
	"github.com/imdhq/imd/adapters/bleveindex"
	"github.com/imdhq/imd/adapters/blobfs"
	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/adapters/fcm"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/httpclient"
	"github.com/imdhq/imd/adapters/jwt"
	"github.com/imdhq/imd/adapters/localfs"
	"github.com/imdhq/imd/adapters/mysql"
	"github.com/imdhq/imd/adapters/prometheus"
	"github.com/imdhq/imd/adapters/push"
	redisadapter "github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/adapters/s3blob"
	"github.com/imdhq/imd/adapters/snowflake"
	"github.com/imdhq/imd/adapters/stdimage"
	"github.com/imdhq/imd/core/domain/pushtoken"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/store/archivereader"
	"github.com/imdhq/imd/core/store/dualread"
	"github.com/imdhq/imd/core/store/messagereads"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/nativepush"
	"github.com/imdhq/imd/ports"
)

// Ports is the binding table: every port the core and the listeners are built on, one field
// per port. openAdapters fills it from MySQL, Redis and the rest; the fx graph test fills it
// from the memory fakes (app_test.go). A use case takes Ports whole and picks its fields by
// name, so go-to-definition on any port a use case reads leads here, and the literal in
// openAdapters names the adapter behind it. The message reads are the exception: the use
// cases read messages through messagereads.Reads (newMessageReads), which dual read and the
// archive wrap.
type Ports struct {
	// MySQL: the month tables (one *mysql.MessageStore).
	MessageStore  ports.MessageStore // raw: use cases read through messagereads.Reads
	MessageSearch ports.MessageSearch
	MessageFinder ports.MessageFinder
	MessageEditor ports.MessageEditor
	QueuedMarks   ports.QueuedMarks
	SeqHoles      ports.SeqHoles
	// MySQL: users, friends, blocks and groups (one *mysql.Directory).
	Directory   ports.Directory
	GroupOwners ports.GroupOwners
	Profiles    ports.Profiles
	Friends     ports.Friends
	Blocks      ports.Blocks
	Groups      ports.Groups
	Graph       conversation.Graph
	// MySQL: the rest of a tenant's database.
	DeleteLog         ports.DeleteLog
	HiddenRanges      ports.HiddenRanges
	ShardStore        ports.ShardStore
	ReadStore         ports.ReadStore
	Mailbox           ports.Mailbox
	RouteMirror       ports.RouteMirror
	ShardHousekeeping ports.ShardHousekeeping
	Reports           ports.Reports
	WebhookEndpoints  ports.WebhookEndpoints
	WebhookCursors    ports.WebhookCursors
	Bots              ports.Bots
	WebhookRevisions  ports.WebhookRevisions
	WebhookEvents     ports.WebhookEvents
	Summaries         ports.Summaries
	DailyCounter      ports.DailyCounter
	TokenRevocations  ports.TokenRevocations
	MonthRows         ports.MonthRows
	MonthCatalog      ports.MonthCatalog
	Favorites         ports.Favorites
	GroupFiles        ports.GroupFiles
	References        ports.References
	MediaRefs         ports.MediaRefs
	Reactions         ports.Reactions
	Pins              ports.Pins
	LegacyMessages    ports.LegacyMessages
	MigrationStore    ports.MigrationStore
	MigrationCopier   dualread.Copier
	// MySQL: last_seen and users' settings (one *mysql.Presence).
	PresenceRecords ports.PresenceRecords
	UserSettings    ports.UserSettings
	// MySQL: who read a message, from the members' watermarks.
	ReadReceipts ports.ReadReceipts
	// MySQL: the tenant registry's own database.
	TenantStore ports.TenantStore

	// Redis.
	Ready               httpapi.ReadyCheck
	NodeLeases          ports.NodeLeases
	Presence            ports.Presence
	NodeChannel         ports.NodeChannel
	NodeInspector       ports.NodeInspector
	SeqAllocator        ports.SeqAllocator
	PendingSeqs         ports.PendingSeqs
	MonthState          ports.MonthState
	RouteCache          ports.RouteCache
	RouteFiller         ports.RouteFiller
	RoutePurger         ports.RoutePurger
	HotCache            ports.HotCache
	CommitFollowUp      ports.CommitFollowUp
	DialogStore         ports.DialogStore
	DialogRemover       ports.DialogRemover
	ListGaps            ports.ListGaps
	RedisLineage        ports.RedisLineage
	RouteRepairQueue    ports.RouteRepairQueue
	CompensationList    ports.CompensationList
	Locks               ports.Locks
	DeliverQueue        ports.DeliverQueue // one queue, seen through the views below
	DeliverInspector    ports.DeliverInspector
	DeliverLeaseHolders ports.DeliverLeaseHolders
	DeliverBacklog      ports.DeliverBacklog
	DeliverLeases       ports.DeliverLeases
	DeliverDepth        ports.DeliverDepth

	// In the process, on local disk or in a bucket.
	IDs            ports.IDGenerator
	Clock          ports.Clock
	ReadyStorage   runtime.ReadyStorage // a tenant's database and the ID clock, checked before its loops start
	Tokens         ports.Tokens
	TokenInspector ports.TokenInspector
	Metrics        ports.Metrics
	MetricsHandler http.Handler
	SearchIndex    ports.SearchIndex
	BlobStore      ports.BlobStore
	ObjectStore    ports.ObjectStore
	Imager         ports.Imager      // stdimage: thumbnails of image uploads (issue 32)
	Files          httpapi.FileStore // the /files/ handler of a local object store; nil for S3
	PushNotifier   ports.PushNotifier
	PushTokens     ports.PushTokens
	WebhookSender  ports.WebhookSender
}

// held is what the real adapters keep open, as hooks lifecycle.go places in the start and stop
// order; the memory fakes hold nothing.
type held struct {
	// Connections close after everything built on them has stopped: the MySQL pools, the
	// message store's writers (they commit what they queued), the Redis client.
	Connections []fx.Hook
	// Stores open the registry's database at start, before the tenants load, and at stop close
	// it, flush the push webhook's queue and close the search index.
	Stores []fx.Hook
}

// Adapters is the real adapters; tests replace it with the memory fakes (app_test.go) and keep
// Application.
func Adapters() fx.Option { return fx.Provide(openAdapters) }

// openAdapters opens MySQL, then Redis, then the ID generator (the start order of seed 003
// §18), and binds each port to the adapter that serves it.
func openAdapters(cfg config.Config, log *slog.Logger) (Ports, held, error) {
	db, err := openMySQL(cfg)
	if err != nil {
		return Ports{}, held{}, err
	}
	metrics := prometheus.New(log)
	messages := mysql.NewMessageStore(db, mysql.MessageStoreOptions{
		DedupTTL: time.Duration(cfg.Shard.DedupRetentionDays) * 24 * time.Hour, Metrics: metrics,
	})
	rdb, err := openRedis(cfg)
	if err != nil {
		return Ports{}, held{}, err
	}
	ids, err := snowflake.New(cfg.NodeID)
	if err != nil {
		return Ports{}, held{}, err
	}
	queue, err := redisadapter.NewDeliverQueue(rdb).WithPartitions(cfg.Deliver.Partitions)
	if err != nil {
		return Ports{}, held{}, err
	}
	index, err := bleveindex.New(cfg.Search.Dir)
	if err != nil {
		return Ports{}, held{}, err
	}
	blobs, err := newBlobStore(cfg)
	if err != nil {
		return Ports{}, held{}, err
	}
	objects, files, err := newObjectStore(cfg)
	if err != nil {
		return Ports{}, held{}, err
	}
	notifier, flushNotifier, err := newPushNotifier(cfg, metrics, log)
	if err != nil {
		return Ports{}, held{}, err
	}
	pushTokens := mysql.NewPushTokens(db)

	directory := mysql.NewDirectory(db)
	deleteLog := mysql.NewDeleteLog(db)
	shards := mysql.NewShardStore(db)
	summaries := mysql.NewSummaries(db)
	monthRows := mysql.NewMonthRows(db)
	references := mysql.NewReferences(db)
	marks := mysql.NewReactions(db)
	migrations := mysql.NewMigrations(db)
	registry := mysql.NewTenantRegistry(db, cfg.Registry.Database)
	seen := mysql.NewPresence(db)
	nodes := redisadapter.NewNodes(rdb)
	seqs := redisadapter.NewSeqAllocator(rdb, 0)
	routes := redisadapter.NewRouteCache(rdb)
	hot := redisadapter.NewHotCache(rdb, redisadapter.HotCacheOptions{})
	dialogs := redisadapter.NewDialogStore(rdb)
	notifier, flushNotifier, err = withNativePush(cfg, notifier, flushNotifier, pushTokens, dialogs, metrics, log)
	if err != nil {
		return Ports{}, held{}, err
	}
	tokens := jwt.New([]byte(cfg.TokenSecret))
	bound := Ports{
		MessageStore:  messages,
		MessageSearch: messages,
		MessageFinder: messages,
		MessageEditor: mysql.NewMessageEditor(db),
		QueuedMarks:   messages,
		SeqHoles:      messages,

		Directory:   directory,
		GroupOwners: directory,
		Profiles:    directory,
		Friends:     directory,
		Blocks:      directory,
		Groups:      directory,
		Graph:       directory,

		DeleteLog:         deleteLog,
		HiddenRanges:      deleteLog,
		ShardStore:        shards,
		ReadStore:         mysql.NewReadStore(db),
		Mailbox:           mysql.NewMailbox(db),
		RouteMirror:       mysql.NewRouteMirror(db),
		ShardHousekeeping: mysql.NewHousekeeping(db),
		Reports:           mysql.NewReports(db),
		WebhookEndpoints:  mysql.NewWebhookEndpoints(db),
		WebhookCursors:    mysql.NewWebhookCursors(db),
		Bots:              mysql.NewBots(db),
		WebhookRevisions:  mysql.NewWebhookRevisions(db),
		WebhookEvents:     mysql.NewWebhookEvents(db),
		Summaries:         summaries,
		DailyCounter:      summaries,
		TokenRevocations:  mysql.NewRevocations(db),
		MonthRows:         monthRows,
		MonthCatalog:      monthRows,
		Favorites:         references,
		GroupFiles:        references,
		References:        references,
		MediaRefs:         references,
		Reactions:         marks,
		Pins:              marks,
		LegacyMessages:    mysql.NewLegacy(db),
		MigrationStore:    migrations,
		MigrationCopier:   migrations,
		PresenceRecords:   seen,
		UserSettings:      seen,
		ReadReceipts:      mysql.NewReceipts(db, messages),
		TenantStore:       registry,

		Ready:               redisadapter.Ready(rdb),
		NodeLeases:          nodes,
		Presence:            nodes,
		NodeChannel:         nodes,
		NodeInspector:       nodes,
		SeqAllocator:        seqs,
		PendingSeqs:         seqs,
		MonthState:          redisadapter.NewMonthState(rdb),
		RouteCache:          routes,
		RouteFiller:         routes,
		RoutePurger:         routes,
		HotCache:            hot,
		CommitFollowUp:      redisadapter.NewCommitFollowUp(queue, hot),
		DialogStore:         dialogs,
		DialogRemover:       dialogs,
		ListGaps:            dialogs,
		RedisLineage:        redisadapter.NewLineage(rdb),
		RouteRepairQueue:    redisadapter.NewRepairQueue(rdb),
		CompensationList:    redisadapter.NewCompensationList(rdb),
		Locks:               redisadapter.NewLocks(rdb),
		DeliverQueue:        queue,
		DeliverInspector:    queue,
		DeliverLeaseHolders: queue,
		DeliverBacklog:      queue,
		DeliverLeases:       queue,
		DeliverDepth:        queue,

		IDs:   ids,
		Clock: systemClock{},
		ReadyStorage: runtime.NewReadyStorage(runtime.StorageDeps{
			Databases: db, Watermarks: shards, Clock: ids,
		}),
		Tokens:         tokens,
		TokenInspector: tokens,
		Metrics:        metrics,
		MetricsHandler: metrics.Handler(),
		SearchIndex:    index,
		BlobStore:      blobs,
		ObjectStore:    objects,
		Imager:         stdimage.New(stdimage.Config{MaxPixels: cfg.Uploads.Thumbnails.MaxPixels}),
		Files:          files,
		PushNotifier:   notifier,
		PushTokens:     pushTokens,
		WebhookSender:  httpclient.NewSender(cfg.Webhooks.Timeout),
	}
	stores := []fx.Hook{fx.StartStopHook(registry.Open, registry.Close)}
	if flushNotifier != nil {
		stores = append(stores, fx.StopHook(flushNotifier))
	}
	stores = append(stores, fx.StopHook(index.Close))
	return bound, held{
		Connections: []fx.Hook{fx.StopHook(db.Close), fx.StopHook(messages.Close), fx.StopHook(rdb.Close)},
		Stores:      stores,
	}, nil
}

// systemClock is the node clock; month decisions never use it (they use Redis TIME).
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

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
	opts := []redisadapter.Option{redisadapter.WithAuth(cfg.Redis.Username, cfg.Redis.Password), redisadapter.WithTLS(certs)}
	if s := cfg.Redis.Sentinel; s.Enabled() {
		opts = append(opts, redisadapter.WithSentinel(s.MasterSet, s.Addrs, s.Username, s.Password, s.Refresh))
	}
	return redisadapter.Open(ctx, cfg.Redis.Addr, opts...)
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

// newPushNotifier is the webhook when one is configured, else Noop, and what flushes the
// webhook's queue at stop (nil for Noop).
func newPushNotifier(cfg config.Config, met ports.Metrics, log *slog.Logger) (ports.PushNotifier, func(context.Context) error, error) {
	if cfg.Push.Webhook == "" {
		return push.Noop{}, nil, nil
	}
	w, err := push.NewWebhook(push.WebhookConfig{URL: cfg.Push.Webhook, Timeout: cfg.Push.Timeout, Queue: cfg.Push.Queue}, met, log)
	if err != nil {
		return nil, nil, err
	}
	return w, w.Close, nil
}

// withNativePush puts native APNs/FCM alerts (docs/DESIGN.md issue-32 "Native push") in front
// of next when a provider has credentials; closing them flushes next's queue too.
func withNativePush(cfg config.Config, next ports.PushNotifier, flushNext func(context.Context) error,
	tokens ports.PushTokens, dialogs ports.DialogStore, met ports.Metrics, log *slog.Logger,
) (ports.PushNotifier, func(context.Context) error, error) {
	providers := map[pushtoken.Platform]ports.PushProvider{}
	p := cfg.Push
	if p.APNs.Key != "" {
		c, err := apns.New(apns.Config{KeyPEM: []byte(p.APNs.Key), KeyID: p.APNs.KeyID, TeamID: p.APNs.TeamID, Host: p.APNs.Host})
		if err != nil {
			return nil, nil, err
		}
		providers[pushtoken.APNs] = c
	}
	if p.FCM.Credentials != "" {
		c, err := fcm.New(fcm.Config{CredentialsJSON: []byte(p.FCM.Credentials), Endpoint: p.FCM.Endpoint})
		if err != nil {
			return nil, nil, err
		}
		providers[pushtoken.FCM] = c
	}
	if len(providers) == 0 {
		return next, flushNext, nil
	}
	s := nativepush.New(cfg.NativePush(), nativepush.Deps{
		Tokens: tokens, Dialogs: dialogs, Providers: providers, Next: next, FlushNext: flushNext, Metrics: met, Log: log, Sleep: nil,
	})
	return s, s.Close, nil
}

// newMessageReads hands the month tables' ports to the chain every use case reads messages
// through (dual read when on, then the archive).
func newMessageReads(cfg config.Config, p Ports, reader *archivereader.Reader, states *archivereader.States, log *slog.Logger) messagereads.Reads {
	return messagereads.New(cfg.MessageReads(), messagereads.Deps{
		Store:   p.MessageStore,
		Search:  p.MessageSearch,
		Finder:  p.MessageFinder,
		Editor:  p.MessageEditor,
		Legacy:  p.LegacyMessages,
		Copier:  p.MigrationCopier,
		Clock:   p.Clock,
		Archive: reader,
		States:  states,
		Log:     log,
	})
}
