package main

import (
	"context"
	"errors"
	"log/slog"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/core/archiver"
	"github.com/imdhq/imd/core/archivereader"
	"github.com/imdhq/imd/core/conversation"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/favorites"
	"github.com/imdhq/imd/core/groupfiles"
	"github.com/imdhq/imd/core/history"
	"github.com/imdhq/imd/core/jobs"
	"github.com/imdhq/imd/core/longsearch"
	"github.com/imdhq/imd/core/reindex"
	"github.com/imdhq/imd/core/replies"
	"github.com/imdhq/imd/core/retention"
	"github.com/imdhq/imd/core/routerepair"
	"github.com/imdhq/imd/core/shardmanager"
	"github.com/imdhq/imd/ports"
)

// Archive provides archiving and retention of sealed months, the archive-aware message store
// history reads through, the references into messages (favorites, reply previews, group
// files) and the long-term search index fed after COMMIT (seed 000 §6.6, §8, §10).
func Archive() fx.Option {
	return fx.Options(
		fx.Provide(
			newArchiveReader,
			newArchiveStates,
			newArchivedStore,
			newIndexer,
			newGroupFiles,
			newArchiver,
			newRetention,
			newReindex,
			func(c ports.Clock) *jobs.Jobs { return jobs.NewJobs(c.Now, jobs.DefaultKeep) },
			newArchiveHTTP,
			fx.Annotate(func(x *longsearch.Indexer) ports.CommitListener { return x }, fx.ResultTags(`group:"commit_listeners"`)),
			fx.Annotate(func(g *groupfiles.Service) ports.CommitListener { return g }, fx.ResultTags(`group:"commit_listeners"`)),
		),
		// Messages of archived months are the archive's: changing one needs a restore first.
		fx.Decorate(func(e ports.MessageEditor, st *archivereader.States) ports.MessageEditor {
			return archivereader.NewEditor(e, st)
		}),
		fx.Invoke(func(lc fx.Lifecycle, js *jobs.Jobs) { lc.Append(fx.StopHook(js.Close)) }), // running jobs are cancelled
	)
}

func newArchiveReader(cfg config.Config, b ports.BlobStore, h ports.HiddenRanges, m ports.Metrics) *archivereader.Reader {
	return archivereader.NewReader(archivereader.Config{Manifests: cfg.Archive.ManifestCache, Chunks: cfg.Archive.ChunkCache}, b, h, m)
}

func newArchiveStates(cfg config.Config, s ports.ShardStore, c ports.Clock) *archivereader.States {
	return archivereader.NewStates(s, cfg.Archive.StateTTL, c)
}

// newArchivedStore wraps the message store (and its search) so archived months are read from
// the archive; core/history reads through it.
func newArchivedStore(s ports.MessageStore, search ports.MessageSearch, r *archivereader.Reader, st *archivereader.States) *archivereader.Store {
	return archivereader.NewStore(s, search, r, st)
}

func newIndexer(cfg config.Config, x ports.SearchIndex, h *history.Service, m ports.Metrics, log *slog.Logger) *longsearch.Indexer {
	fetch := func(ctx context.Context, tenant, topic string, seq int64) (message.Message, error) {
		return h.Get(ctx, tenant, 0, topic, seq)
	}
	return longsearch.NewIndexer(longsearch.IndexerConfig{Queue: cfg.Search.Queue}, x, fetch, m, log)
}

func newGroupFiles(refs ports.GroupFiles, r *conversation.Resolver, h ports.HiddenRanges, m ports.Metrics, log *slog.Logger) *groupfiles.Service {
	return groupfiles.New(groupfiles.Deps{Files: refs, Resolver: r, Hidden: h, Metrics: m, Log: log})
}

type archiverParams struct {
	fx.In
	Cfg     config.Config
	Shards  ports.ShardStore
	Manager *shardmanager.Manager
	Rows    ports.MonthRows
	Purged  ports.MonthCatalog
	Mirror  ports.RouteMirror
	Store   ports.MessageStore
	Blobs   ports.BlobStore
	Reader  *archivereader.Reader
	States  *archivereader.States
	Routes  ports.RoutePurger
	Queue   ports.DeliverQueue
	Repair  *routerepair.Service
	Refs    ports.References
	Files   ports.GroupFiles
	Index   ports.SearchIndex
	Months  ports.MonthState
	Locks   ports.Locks
	Clock   ports.Clock
	Metrics ports.Metrics
	Log     *slog.Logger
}

func newArchiver(p archiverParams) (*archiver.Service, error) {
	// The queue the deliver workers use, so the backlog check sees its partitions.
	backlog, ok := p.Queue.(ports.DeliverBacklog)
	if !ok {
		return nil, errors.New("archive: the deliver queue cannot report a month's backlog")
	}
	return archiver.New(archiver.Config{ChunkRows: p.Cfg.Archive.ChunkRows, AheadMonths: shardmanager.DefaultAheadMonths}, archiver.Deps{
		Catalog: p.Shards, Manager: p.Manager, Rows: p.Rows, Mirror: p.Mirror, Store: p.Store, Blobs: p.Blobs,
		Reader: p.Reader, States: p.States, Deliveries: backlog, Repairs: p.Repair,
		References: p.Refs, Purged: p.Purged, Routes: p.Routes, Search: p.Index, Files: p.Files,
		Months: p.Months, Locks: p.Locks, Clock: p.Clock, Metrics: p.Metrics, Log: p.Log,
	}), nil
}

func newRetention(cfg config.Config, a *archiver.Service, s ports.ShardStore, rows ports.MonthRows, m ports.MonthState, log *slog.Logger) (*retention.Service, error) {
	return retention.New(cfg.Archive.Retention.Policy(), cfg.Archive.TenantPolicies(), retention.Deps{Archiver: a, Catalog: s, Rows: rows, Months: m, Log: log})
}

func newReindex(s ports.ShardStore, mirror ports.RouteMirror, store *archivereader.Store, x *longsearch.Indexer, g *groupfiles.Service) *reindex.Service {
	return reindex.New(reindex.Deps{Catalog: s, Mirror: mirror, Store: store, Sinks: []reindex.Sink{x, g}})
}

type archiveHTTPParams struct {
	fx.In
	Archiver  *archiver.Service
	Retention *retention.Service
	Reindex   *reindex.Service
	Jobs      *jobs.Jobs
	Index     ports.SearchIndex
	History   *history.Service
	Resolver  *conversation.Resolver
	Groups    ports.Groups
	Hidden    ports.HiddenRanges
	Refs      ports.Favorites
	Files     *groupfiles.Service
	Clock     ports.Clock
}

// archiveHTTP is what the HTTP listener serves of this file.
type archiveHTTP struct {
	Archive    httpapi.ArchiveOps
	References httpapi.ReferenceOps
}

func newArchiveHTTP(p archiveHTTPParams) archiveHTTP {
	search := longsearch.NewSearcher(longsearch.SearchDeps{Index: p.Index, History: p.History, Resolver: p.Resolver, Groups: p.Groups, Hidden: p.Hidden})
	return archiveHTTP{
		Archive: httpapi.ArchiveOps{Archiver: p.Archiver, Retention: p.Retention, Reindex: p.Reindex, Jobs: p.Jobs, Search: search},
		References: httpapi.ReferenceOps{
			Favorites: favorites.New(favorites.Deps{Store: p.Refs, History: p.History, Hidden: p.Hidden, Clock: p.Clock}),
			Files:     p.Files,
			Replies:   replies.New(p.History, p.Hidden),
		},
	}
}
