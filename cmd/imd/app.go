package main

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/adapters/fxdeps"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/protocol/session"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/core/kit/background"
	"github.com/imdhq/imd/core/kit/inflight"
	"github.com/imdhq/imd/core/kit/jobs"
	"github.com/imdhq/imd/core/loop/cluster"
	"github.com/imdhq/imd/core/loop/dailystats"
	"github.com/imdhq/imd/core/loop/deliver"
	"github.com/imdhq/imd/core/loop/migration"
	"github.com/imdhq/imd/core/loop/retention"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/loop/seqholes"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/store/archivereader"
	"github.com/imdhq/imd/core/store/dualread"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/archiver"
	"github.com/imdhq/imd/core/usecase/authn"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/favorites"
	"github.com/imdhq/imd/core/usecase/groupfiles"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/core/usecase/longsearch"
	"github.com/imdhq/imd/core/usecase/modify"
	"github.com/imdhq/imd/core/usecase/read"
	"github.com/imdhq/imd/core/usecase/reindex"
	"github.com/imdhq/imd/core/usecase/replies"
	"github.com/imdhq/imd/core/usecase/reports"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/core/usecase/tenantregistry"
	"github.com/imdhq/imd/core/usecase/uploads"
	"github.com/imdhq/imd/ports"
)

// Options is the whole server: the real adapters, then the application around them.
func Options(cfg config.Config, log *slog.Logger) fx.Option {
	return fx.Options(Adapters(cfg), Application(cfg, log))
}

// Application is the core, the runtime and the transports over the ports; tests assemble it
// around the memory fakes instead of Adapters (app_test.go). Its invokes run in the start
// order of seed 003 §18, and stop backwards: the node's cluster loops (lease and partitions
// held before the deliver workers start), every tenant's loops (core/runtime), the listeners,
// then the refresh that adds tenants other nodes provision.
func Application(cfg config.Config, log *slog.Logger) fx.Option {
	return fx.Options(
		fx.Supply(cfg, log),
		fx.Provide(
			config.Config.ShardManager, config.Config.RouteRepairs, config.Config.Recall, config.Config.Send,
			config.Config.TenantRegistry, config.Config.Authn, config.Config.UploadLimits, config.Config.Nodes,
			config.Config.ArchiveCaches, config.Config.Archiving, config.Config.SearchIndexing, config.Config.Retention,
			config.Config.MigrationJob, config.Config.MigrationDualRead,
			config.Config.NodeLoops, config.Config.SeqHoleSweep, config.Config.DeliverWorkers,
		),
		socialGraph(), messages(), archive(), legacyMigration(cfg), nodes(), tenantLoops(), transports(),
		fx.Invoke(func(lc fx.Lifecycle, reg *tenantregistry.Registry) {
			refresh := background.New(func(ctx context.Context) { reg.Run(ctx, cfg.Registry.RefreshInterval) })
			lc.Append(fx.Hook{OnStart: refresh.Start, OnStop: refresh.Stop})
		}),
	)
}

// systemClock is the node clock; month decisions never use it (they use Redis TIME).
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// commitListeners is the group the send path notifies after COMMIT.
const commitListeners = `group:"commit_listeners"`

// socialGraph is the social graph, the tenant registry, authentication with revocation, uploads
// and reports.
func socialGraph() fx.Option {
	return fx.Provide(
		dailystats.New,
		fx.Annotate(func(c *dailystats.Counter) ports.CommitListener { return c }, fx.ResultTags(commitListeners)),
		// Changes made through this node invalidate at once; other nodes' within the TTL.
		func(d ports.Directory, c ports.Clock) *membership.Cache {
			return membership.New(d, c, conversation.DefaultRulesTTL)
		},
		func(cfg config.Config, g conversation.Graph, ids ports.IDGenerator, m *membership.Cache, c ports.Clock) *conversation.Resolver {
			return conversation.NewResolver(g, ids, m, conversation.WithClock(c), conversation.WithSystemAccounts(cfg.Message.SystemAccounts))
		},
		fxdeps.Inject(directory.New),
		func(rt *runtime.Runtime) tenantregistry.Activator { return rt.Add },
		fxdeps.Inject(tenantregistry.New),
		func(r *tenantregistry.Registry) ports.KnownTenant { return r.Known },
		fxdeps.As(fxdeps.Inject(authn.New), fx.Self(), new(ports.Authenticator)),
		fxdeps.Inject(uploads.New),
		fxdeps.Inject(reports.New),
		fxdeps.Gather[httpapi.SocialDeps](),
	)
}

// messages is the send path and what changes and reads messages, over the shard manager and
// the route repairs.
func messages() fx.Option {
	return fx.Options(
		fx.Provide(
			fxdeps.As(fxdeps.Inject(shardmanager.New), fx.Self(), new(send.Months)),
			fxdeps.As(fxdeps.Inject(routerepair.New), fx.Self(), new(ports.RouteRepairs), new(shardmanager.Backlog),
				new(admin.RouteRebuilder), new(migration.Routes)),
			fxdeps.As(fxdeps.Inject(send.New), fx.Self(), new(modify.Publisher), new(directory.TopicPublisher)),
			fxdeps.Inject(admin.New),
			func(r ports.MonthRows) admin.TableChecker { return r },
			fxdeps.Inject(modify.New),
			fxdeps.As(fxdeps.Inject(inbox.New), fx.Self(), new(httpapi.DialogLister), new(httpapi.DialogSettings), new(httpapi.InboxOps)),
			fxdeps.As(fxdeps.Inject(inbox.NewMailer), fx.Self(), new(ports.ControlEvents)),
			fxdeps.As(fxdeps.Inject(read.New), fx.Self(), new(httpapi.MessageReader)),
			fxdeps.As(deliver.NewMissed, fx.Self(), new(tcpserver.MissedPushes)),
			// One per node: the send path and the deliver consumers of this process share it.
			inflight.New,
			queueView[ports.DeliverInspector],
			queueView[ports.DeliverLeaseHolders],
			fxdeps.Gather[httpapi.NodeOps](),
		),
		// History reads archived months from the archive: inside this module its message store
		// and search are the archive-aware store.
		fx.Module("history",
			fx.Provide(fxdeps.As(fxdeps.Inject(history.New), fx.Self(), new(modify.Locator))),
			fx.Decorate(func(s *archivereader.Store) (ports.MessageStore, ports.MessageSearch) { return s, s }),
		),
	)
}

// archive is archiving and retention of sealed months, the archive-aware message store, the
// references into messages (favorites, reply previews, group files) and the long-term search
// index fed after COMMIT (seed 000 §6.6, §8, §10).
func archive() fx.Option {
	return fx.Options(
		fx.Provide(
			archivereader.NewReader,
			archivereader.NewStates,
			archivereader.NewStore,
			// The index is fed from history, which reads archived months too.
			func(h *history.Service) longsearch.Fetcher { return h.Fetch },
			longsearch.NewIndexer,
			fxdeps.Inject(groupfiles.New),
			// The queue the deliver workers use, so the backlog check sees its partitions.
			queueView[ports.DeliverBacklog],
			fxdeps.Inject(archiver.New),
			fxdeps.Inject(retention.New),
			func(s ports.ShardStore, mirror ports.RouteMirror, store *archivereader.Store, x *longsearch.Indexer, g *groupfiles.Service) *reindex.Service {
				return reindex.New(reindex.Deps{Catalog: s, Mirror: mirror, Store: store, Sinks: []reindex.Sink{x, g}})
			},
			func(c ports.Clock) *jobs.Jobs { return jobs.NewJobs(c.Now, jobs.DefaultKeep) },
			fxdeps.Inject(longsearch.NewSearcher),
			fxdeps.Inject(favorites.New),
			replies.New,
			fxdeps.Gather[httpapi.ArchiveOps](),
			fxdeps.Gather[httpapi.ReferenceOps](),
			fx.Annotate(func(x *longsearch.Indexer) ports.CommitListener { return x }, fx.ResultTags(commitListeners)),
			fx.Annotate(func(g *groupfiles.Service) ports.CommitListener { return g }, fx.ResultTags(commitListeners)),
		),
		fx.Invoke(func(lc fx.Lifecycle, js *jobs.Jobs) { lc.Append(fx.StopHook(js.Close)) }), // running jobs are cancelled
	)
}

// legacyMigration is the legacy single-table migration (seed 000 §9): the job, its
// supervisor, and, with migration.dual_read on, the dual-read decorators of the ports every
// query path reads through, so history, search, READ and admin reads merge the legacy table.
func legacyMigration(cfg config.Config) fx.Option {
	opts := []fx.Option{fx.Provide(fxdeps.Inject(migration.New), newMessageEditor)}
	if cfg.Migration.DualRead {
		opts = append(opts,
			fx.Provide(func(l ports.LegacyMessages, c ports.Clock, log *slog.Logger) *dualread.Source {
				return dualread.NewSource(l, c, cfg.Migration.StatusTTL, log)
			}),
			fx.Decorate(func(s ports.MessageStore, q ports.MessageSearch, f ports.MessageFinder, src *dualread.Source) (
				ports.MessageStore, ports.MessageSearch, ports.MessageFinder,
			) {
				return dualread.NewStore(s, src), dualread.NewSearch(q, src), dualread.NewFinder(f, src)
			}),
		)
	}
	return fx.Options(opts...)
}

type editorParams struct {
	fx.In
	Base     baseEditor
	Jobs     dualread.Copier
	Archived *archivereader.States
	// Source exists with dual read on: a legacy message is then copied before it is changed.
	Source *dualread.Source `optional:"true"`
}

// newMessageEditor is the store's editor behind dual read's copy-on-change when it is on, and
// behind the archive: messages of archived months are the archive's, changing one needs a
// restore first.
func newMessageEditor(p editorParams) ports.MessageEditor {
	e := p.Base.MessageEditor
	if p.Source != nil {
		e = dualread.NewEditor(e, p.Source, p.Jobs)
	}
	return archivereader.NewEditor(e, p.Archived)
}

// nodes is several nodes on one tenant (DESIGN §11): this node's instance name, the lease
// keeper (node lease, dead-node retirement, deliver partitions), the presence tracker the
// session registry reports to, the cross-node pusher the deliver side pushes through, and the
// receiver of this node's push channel.
func nodes() fx.Option {
	return fx.Options(
		fx.Provide(
			cluster.NewNodeView,
			cluster.NewForwarder,
			fxdeps.As(cluster.NewTracker, fx.Self(), new(session.Observer)),
			queueView[ports.DeliverLeases],
			fxdeps.As(fxdeps.Inject(cluster.NewKeeper), fx.Self(), new(deliver.Owner)),
			fxdeps.Inject(cluster.NewPusher),
			// A push that fails here is acted on as the deliver workers act on their own.
			fxdeps.As(deliver.NewFallback, new(cluster.Fallback)),
			fxdeps.Inject(cluster.NewReceiver),
			cluster.NewLoops,
			func() *cluster.LateTenants { return &cluster.LateTenants{} },
			func(l *cluster.LateTenants) cluster.Tenants { return l.Names },
		),
		fx.Invoke(func(lc fx.Lifecycle, names *cluster.LateTenants, reg *tenantregistry.Registry, l *cluster.Loops) {
			names.Bind(reg.Names)
			lc.Append(fx.Hook{OnStart: l.Start, OnStop: l.Stop})
		}),
	)
}

// tenantLoops runs every tenant's background loops through core/runtime, before the listeners
// start and after they stop: every committed message reaches the index feed and the deliver
// consumers, every push the listener gives up becomes a mailbox row, no send is counted after
// the last stats flush.
func tenantLoops() fx.Option {
	return fx.Options(
		fx.Provide(
			fxdeps.Inject(seqholes.New),
			// Each tenant's deliver workers are built from these when its loop starts.
			fxdeps.Gather[deliver.Deps](),
			queueView[ports.DeliverDepth],
			fxdeps.Inject(runtime.NewNode),
		),
		fx.Invoke(func(lc fx.Lifecycle, reg *tenantregistry.Registry, rt *runtime.Runtime) {
			// Every tenant the registry knows is readied before the runtime starts the loops.
			lc.Append(fx.StartHook(reg.Boot))
			lc.Append(fx.Hook{OnStart: rt.Start, OnStop: rt.Stop})
		}),
	)
}

// queueView is the deliver queue as one of the views it also offers (operator, lease and
// backlog views).
func queueView[View any](q ports.DeliverQueue) (View, error) { return fxdeps.View[View](q) }
