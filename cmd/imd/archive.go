package main

import (
	"context"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/core/archiver"
	"github.com/imdhq/imd/core/archivereader"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/favorites"
	"github.com/imdhq/imd/core/groupfiles"
	"github.com/imdhq/imd/core/history"
	"github.com/imdhq/imd/core/jobs"
	"github.com/imdhq/imd/core/longsearch"
	"github.com/imdhq/imd/core/reindex"
	"github.com/imdhq/imd/core/replies"
	"github.com/imdhq/imd/core/retention"
	"github.com/imdhq/imd/ports"
)

// Archive provides archiving and retention of sealed months, the archive-aware message store
// history reads through, the references into messages (favorites, reply previews, group
// files) and the long-term search index fed after COMMIT (seed 000 §6.6, §8, §10).
func Archive() fx.Option {
	return fx.Options(
		fx.Provide(
			config.Config.ArchiveCaches, config.Config.Archiving, config.Config.SearchIndexing,
			archivereader.NewReader,
			func(cfg config.Config, s ports.ShardStore, c ports.Clock) *archivereader.States {
				return archivereader.NewStates(s, cfg.Archive.StateTTL, c)
			},
			// History reads archived months through it (app.go).
			archivereader.NewStore,
			// The index is fed from history, which reads archived months too.
			func(h *history.Service) longsearch.Fetcher {
				return func(ctx context.Context, tenant, topic string, seq int64) (message.Message, error) {
					return h.Get(ctx, tenant, 0, topic, seq)
				}
			},
			longsearch.NewIndexer,
			inject(groupfiles.New),
			// The queue the deliver workers use, so the backlog check sees its partitions.
			queueView[ports.DeliverBacklog],
			inject(archiver.New),
			inject(func(cfg config.Config, d retention.Deps) (*retention.Service, error) {
				return retention.New(cfg.Archive.Retention.Policy(), cfg.Archive.TenantPolicies(), d)
			}),
			func(s ports.ShardStore, mirror ports.RouteMirror, store *archivereader.Store, x *longsearch.Indexer, g *groupfiles.Service) *reindex.Service {
				return reindex.New(reindex.Deps{Catalog: s, Mirror: mirror, Store: store, Sinks: []reindex.Sink{x, g}})
			},
			func(c ports.Clock) *jobs.Jobs { return jobs.NewJobs(c.Now, jobs.DefaultKeep) },
			inject(longsearch.NewSearcher),
			inject(favorites.New),
			replies.New,
			gather[httpapi.ArchiveOps](),
			gather[httpapi.ReferenceOps](),
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
