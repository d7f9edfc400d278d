package main

import (
	"log/slog"

	"github.com/imdhq/imd/adapters/config"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/core/kit/inflight"
	"github.com/imdhq/imd/core/kit/jobs"
	"github.com/imdhq/imd/core/loop/cluster"
	"github.com/imdhq/imd/core/loop/dailystats"
	"github.com/imdhq/imd/core/loop/deliver"
	"github.com/imdhq/imd/core/loop/listrepair"
	"github.com/imdhq/imd/core/loop/migration"
	"github.com/imdhq/imd/core/loop/retention"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/loop/seqholes"
	"github.com/imdhq/imd/core/loop/shardmanager"
	webhookloop "github.com/imdhq/imd/core/loop/webhooks"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/store/archivereader"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/store/messagereads"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/archiver"
	"github.com/imdhq/imd/core/usecase/authn"
	"github.com/imdhq/imd/core/usecase/bots"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/favorites"
	"github.com/imdhq/imd/core/usecase/forward"
	"github.com/imdhq/imd/core/usecase/groupfiles"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/core/usecase/longsearch"
	"github.com/imdhq/imd/core/usecase/modify"
	"github.com/imdhq/imd/core/usecase/nativepush"
	"github.com/imdhq/imd/core/usecase/presence"
	"github.com/imdhq/imd/core/usecase/reactions"
	"github.com/imdhq/imd/core/usecase/read"
	"github.com/imdhq/imd/core/usecase/receipts"
	"github.com/imdhq/imd/core/usecase/reindex"
	"github.com/imdhq/imd/core/usecase/replies"
	"github.com/imdhq/imd/core/usecase/reports"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/core/usecase/tenantregistry"
	"github.com/imdhq/imd/core/usecase/typing"
	"github.com/imdhq/imd/core/usecase/uploads"
	"github.com/imdhq/imd/core/usecase/webhooks"
	"github.com/imdhq/imd/ports"
)

// Each constructor here builds one component of the core from Ports (the adapters,
// ports.go), messagereads.Reads and the components it calls, every Deps field by name; fx calls it
// once, when a component that takes its result is built.

// The social graph, the tenant registry, authentication, uploads and reports.

func newDailyStats(p Ports, log *slog.Logger) *dailystats.Counter {
	return dailystats.New(p.DailyCounter, log)
}

// newMembership caches group members and send rules: changes made through this node invalidate
// at once, other nodes' within the TTL.
func newMembership(p Ports) *membership.Cache {
	return membership.New(p.Directory, p.Clock, conversation.DefaultRulesTTL)
}

func newResolver(cfg config.Config, p Ports, members *membership.Cache) *conversation.Resolver {
	return conversation.NewResolver(p.Graph, p.IDs, members,
		conversation.WithClock(p.Clock), conversation.WithSystemAccounts(cfg.Message.SystemAccounts))
}

func newDirectory(p Ports, log *slog.Logger, resolver *conversation.Resolver, mailer *inbox.Mailer, topics *send.Service,
	sessions *cluster.Sessions,
) *directory.Service {
	return directory.New(directory.Deps{
		Directory: p.Directory,
		Profiles:  p.Profiles,
		Friends:   p.Friends,
		Blocks:    p.Blocks,
		Groups:    p.Groups,
		Resolver:  resolver,
		IDs:       p.IDs,
		Clock:     p.Clock,
		Events:    mailer,
		Topics:    topics,
		Dialogs:   p.DialogRemover,
		Sessions:  sessions,
		Log:       log,
	})
}

// newTenantRegistry activates each tenant it learns of in the runtime.
func newTenantRegistry(cfg config.Config, p Ports, log *slog.Logger, rt *runtime.Runtime) (*tenantregistry.Registry, error) {
	return tenantregistry.New(cfg.TenantRegistry(), tenantregistry.Deps{
		Store:    p.TenantStore,
		Activate: rt.Add,
		Clock:    p.Clock,
		Log:      log,
	})
}

func newAuthn(cfg config.Config, p Ports, reg *tenantregistry.Registry) *authn.Service {
	return authn.New(cfg.Authn(), authn.Deps{
		Tokens:      p.TokenInspector,
		Revocations: p.TokenRevocations,
		Tenants:     reg.Known,
		Users:       p.Directory,
		Clock:       p.Clock,
	})
}

func newUploads(cfg config.Config, p Ports, resolver *conversation.Resolver) *uploads.Service {
	return uploads.New(cfg.UploadLimits(), uploads.Deps{
		Store: p.ObjectStore, Clock: p.Clock, Refs: p.MediaRefs, Profiles: p.Profiles, Resolver: resolver,
		Imager: p.Imager, Metrics: p.Metrics,
	})
}

func newWebhooks(p Ports) *webhooks.Service {
	return webhooks.New(webhooks.Deps{Store: p.WebhookEndpoints, Cursors: p.WebhookCursors, Locks: p.Locks, Bots: p.Bots, IDs: p.IDs,
		Clock: p.Clock, ReplayWait: webhooks.DefaultReplayWait})
}

func newPushTokenRegistry(p Ports, holders *nativepush.Holders) *nativepush.Registry {
	return nativepush.NewRegistry(p.PushTokens, p.Clock, holders)
}

// newTokenHolders is the node's set of the users holding a push token, whom alone the ack wait
// costs anything (DESIGN issue-32 "Native push"); nil when push.ack_wait is 0.
func newTokenHolders(cfg config.Config, p Ports, log *slog.Logger) *nativepush.Holders {
	if cfg.AckWait().Wait <= 0 {
		return nil
	}
	return nativepush.NewHolders(nativepush.HoldersConfig{}, p.PushTokens, p.Clock, log)
}

func newBots(p Ports, users *authn.Service, sessions *cluster.Sessions) *bots.Service {
	return bots.New(bots.Deps{Users: p.Directory, Bots: p.Bots, Tokens: p.Tokens, Revoker: users, Sessions: sessions,
		Endpoints: p.WebhookEndpoints, Clock: p.Clock})
}

func newWebhookLoop(cfg config.Config, p Ports, h *history.Service, resolver *conversation.Resolver, log *slog.Logger) *webhookloop.Loop {
	return webhookloop.New(cfg.WebhookDelivery(), webhookloop.Deps{
		Endpoints: p.WebhookEndpoints,
		Cursors:   p.WebhookCursors,
		Changes:   p.RouteMirror,
		History:   h,
		Revisions: p.WebhookRevisions,
		Events:    p.WebhookEvents,
		Readers:   resolver,
		Sender:    p.WebhookSender,
		Locks:     p.Locks,
		Metrics:   p.Metrics,
		Clock:     p.Clock,
		Log:       log,
	})
}

func newReports(p Ports, h *history.Service) *reports.Service {
	return reports.New(reports.Deps{Store: p.Reports, History: h, IDs: p.IDs, Clock: p.Clock})
}

// The send path and what reads and changes messages, over the shard manager and the route
// repairs.

func newShardManager(cfg config.Config, p Ports, log *slog.Logger, repairs *routerepair.Service) *shardmanager.Manager {
	return shardmanager.New(cfg.ShardManager(), shardmanager.Deps{
		Store:        p.ShardStore,
		Months:       p.MonthState,
		Locks:        p.Locks,
		Repairs:      repairs,
		Compensation: p.CompensationList,
		Housekeeping: p.ShardHousekeeping,
		Metrics:      p.Metrics,
		Log:          log,
	})
}

func newRouteRepairs(cfg config.Config, p Ports, r messagereads.Reads, log *slog.Logger) *routerepair.Service {
	return routerepair.New(cfg.RouteRepairs(), routerepair.Deps{
		Queue:   p.RouteRepairQueue,
		Store:   r.Store,
		Mirror:  p.RouteMirror,
		Routes:  p.RouteCache,
		Months:  p.MonthState,
		Metrics: p.Metrics,
		Log:     log,
	})
}

// newSend is the send path; after COMMIT it tells the daily counter, the long-term index and
// the group files.
func newSend(cfg config.Config, p Ports, r messagereads.Reads, log *slog.Logger, resolver *conversation.Resolver,
	months *shardmanager.Manager, repairs *routerepair.Service, inFlight *inflight.Sends,
	stats *dailystats.Counter, index *longsearch.Indexer, files *groupfiles.Service, media *uploads.Service,
) *send.Service {
	return send.New(cfg.Send(), send.Deps{
		Seq:          p.SeqAllocator,
		Store:        r.Store,
		FollowUp:     p.CommitFollowUp,
		Queued:       p.QueuedMarks,
		IDs:          p.IDs,
		Clock:        p.Clock,
		Metrics:      p.Metrics,
		Resolver:     resolver,
		Media:        media,
		Log:          log,
		Months:       months,
		Repairs:      repairs,
		Compensation: p.CompensationList,
		Listeners:    []ports.CommitListener{stats, index, files},
		InFlight:     inFlight,
		Pending:      p.PendingSeqs,
	})
}

// newHistory reads archived months from the archive: its store and search are the
// archive-aware store.
func newHistory(p Ports, r messagereads.Reads, log *slog.Logger, resolver *conversation.Resolver, repairs *routerepair.Service) *history.Service {
	return history.New(history.Deps{
		Store:    r.Archived,
		Routes:   p.RouteFiller,
		Months:   p.MonthState,
		Metrics:  p.Metrics,
		Resolver: resolver,
		Log:      log,
		Hot:      p.HotCache,
		Hidden:   p.HiddenRanges,
		Search:   r.Archived,
		Repairs:  repairs,
	})
}

func newAdmin(p Ports, routes *routerepair.Service, manager *shardmanager.Manager, social *directory.Service, reg *tenantregistry.Registry) *admin.Service {
	return admin.New(admin.Deps{
		Directory: p.Directory,
		Tokens:    p.Tokens,
		Routes:    routes,
		Shards:    p.ShardStore,
		Manager:   manager,
		Social:    social,
		Summaries: p.Summaries,
		Tenants:   reg.Known,
		Tables:    p.MonthRows,
	})
}

// newModify recalls, edits and deletes; history locates a message's month and the send path
// writes the change's event into the topic.
func newModify(cfg config.Config, p Ports, r messagereads.Reads, log *slog.Logger, resolver *conversation.Resolver,
	h *history.Service, events *send.Service, media *uploads.Service,
) *modify.Service {
	return modify.New(cfg.Recall(), modify.Deps{
		Editor:    r.Editor,
		DeleteLog: p.DeleteLog,
		Store:     r.Store,
		Owners:    p.GroupOwners,
		HotCache:  p.HotCache,
		Locator:   h,
		Events:    events,
		Resolver:  resolver,
		Media:     media,
		Clock:     p.Clock,
		Metrics:   p.Metrics,
		Log:       log,
	})
}

// newReactions keeps reactions and pins; history finds the message in any month and the send
// path announces each change (issue 31).
func newReactions(cfg config.Config, p Ports, log *slog.Logger, resolver *conversation.Resolver, h *history.Service, events *send.Service) *reactions.Service {
	return reactions.New(cfg.ReactionLimits(), reactions.Deps{
		Reactions: p.Reactions,
		Pins:      p.Pins,
		Groups:    p.Groups,
		Messages:  h,
		Resolver:  resolver,
		Events:    events,
		Clock:     p.Clock,
		Metrics:   p.Metrics,
		Log:       log,
	})
}

// newForward copies messages into other conversations through the send path (issue 31).
func newForward(p Ports, h *history.Service, sends *send.Service) *forward.Service {
	return forward.New(forward.Deps{Messages: h, Hidden: p.HiddenRanges, Sender: sends})
}

func newInbox(p Ports, log *slog.Logger) *inbox.Service {
	return inbox.New(inbox.Deps{
		Dialogs: p.DialogStore,
		Reads:   p.ReadStore,
		Mailbox: p.Mailbox,
		Clock:   p.Clock,
		Metrics: p.Metrics,
		Log:     log,
	})
}

// newMailer writes mailbox rows and pushes them through the cross-node pusher.
func newMailer(p Ports, log *slog.Logger, pusher *cluster.LatePusher) *inbox.Mailer {
	return inbox.NewMailer(inbox.MailerDeps{Mailbox: p.Mailbox, Pusher: pusher, IDs: p.IDs, Clock: p.Clock, Log: log})
}

func newRead(p Ports, r messagereads.Reads, log *slog.Logger, resolver *conversation.Resolver, h *history.Service,
	seen *receipts.Service,
) *read.Service {
	return read.New(read.Deps{
		Receipts: seen,
		Resolver: resolver,
		History:  h,
		Finder:   r.Finder,
		IDs:      p.IDs,
		Shards:   p.ShardStore,
		Reads:    p.ReadStore,
		Dialogs:  p.DialogStore,
		Queue:    p.DeliverQueue,
		Log:      log,
	})
}

func newMissed(p Ports, log *slog.Logger, mailer *inbox.Mailer) *deliver.Missed {
	return deliver.NewMissed(mailer, p.Metrics, log)
}

// Archiving and retention of sealed months, the archive-aware reads, the references into
// messages (favorites, reply previews, group files) and the long-term search index fed after
// COMMIT.

func newArchiveReader(cfg config.Config, p Ports) *archivereader.Reader {
	return archivereader.NewReader(cfg.ArchiveCaches(), p.BlobStore, p.HiddenRanges, p.Metrics)
}

func newArchiveStates(cfg config.Config, p Ports) *archivereader.States {
	return archivereader.NewStates(cfg.ArchiveCaches(), p.ShardStore, p.Clock)
}

// newIndexer is fed from history, which reads archived months too.
func newIndexer(cfg config.Config, p Ports, log *slog.Logger, h *history.Service) *longsearch.Indexer {
	return longsearch.NewIndexer(cfg.SearchIndexing(), p.SearchIndex, h.Fetch, p.Metrics, log)
}

func newGroupFiles(p Ports, log *slog.Logger, resolver *conversation.Resolver) *groupfiles.Service {
	return groupfiles.New(groupfiles.Deps{
		Files:    p.GroupFiles,
		Resolver: resolver,
		Hidden:   p.HiddenRanges,
		Metrics:  p.Metrics,
		Log:      log,
	})
}

func newArchiver(cfg config.Config, p Ports, r messagereads.Reads, log *slog.Logger, manager *shardmanager.Manager,
	reader *archivereader.Reader, states *archivereader.States, repairs *routerepair.Service,
) *archiver.Service {
	return archiver.New(cfg.Archiving(), archiver.Deps{
		Catalog:    p.ShardStore,
		Manager:    manager,
		Rows:       p.MonthRows,
		Mirror:     p.RouteMirror,
		Store:      r.Store,
		Blobs:      p.BlobStore,
		Reader:     reader,
		States:     states,
		Deliveries: p.DeliverBacklog,
		Repairs:    repairs,
		References: p.References,
		Purged:     p.MonthCatalog,
		Routes:     p.RoutePurger,
		Search:     p.SearchIndex,
		Files:      p.GroupFiles,
		Months:     p.MonthState,
		Locks:      p.Locks,
		Clock:      p.Clock,
		Metrics:    p.Metrics,
		Log:        log,
	})
}

func newRetention(cfg config.Config, p Ports, log *slog.Logger, a *archiver.Service) (*retention.Service, error) {
	return retention.New(cfg.Retention(), retention.Deps{
		Archiver: a,
		Catalog:  p.ShardStore,
		Rows:     p.MonthRows,
		Months:   p.MonthState,
		Log:      log,
	})
}

// newReindex backfills the long-term index, the group files and the media references from
// every month, archived ones included.
func newReindex(p Ports, r messagereads.Reads, index *longsearch.Indexer, files *groupfiles.Service, media *uploads.Service) *reindex.Service {
	return reindex.New(reindex.Deps{
		Catalog: p.ShardStore,
		Mirror:  p.RouteMirror,
		Store:   r.Archived,
		Sinks:   []reindex.Sink{index, files, media},
	})
}

func newJobs(p Ports) *jobs.Jobs { return jobs.NewJobs(p.Clock.Now, jobs.DefaultKeep) }

func newSearcher(p Ports, h *history.Service, resolver *conversation.Resolver) *longsearch.Searcher {
	return longsearch.NewSearcher(longsearch.SearchDeps{
		Index:    p.SearchIndex,
		History:  h,
		Resolver: resolver,
		Groups:   p.Groups,
		Hidden:   p.HiddenRanges,
	})
}

func newFavorites(p Ports, h *history.Service) *favorites.Service {
	return favorites.New(favorites.Deps{Store: p.Favorites, History: h, Hidden: p.HiddenRanges, Clock: p.Clock})
}

func newReplies(p Ports, h *history.Service) *replies.Service { return replies.New(h, p.HiddenRanges) }

// The legacy single-table migration (seed 000 §9): the job and its supervisor; the dual-read
// decorators are core/store/messagereads (newMessageReads).

func newMigration(cfg config.Config, p Ports, log *slog.Logger, routes *routerepair.Service) *migration.Service {
	return migration.New(cfg.MigrationJob(), migration.Deps{
		Store:    p.MigrationStore,
		Shards:   p.ShardStore,
		Months:   p.MonthState,
		Seq:      p.SeqAllocator,
		Routes:   routes,
		Metrics:  p.Metrics,
		IDs:      p.IDs,
		Clock:    p.Clock,
		Log:      log,
		DualRead: cfg.MigrationDualRead(),
	})
}

// Several nodes on one tenant (DESIGN §11): this node's instance name, the lease keeper (node
// lease, dead-node retirement, deliver partitions), the presence tracker the session registry
// reports to, the cross-node pusher the deliver side pushes through, and the receiver of this
// node's push channel.

func newNodeView(cfg config.Config, log *slog.Logger) (*cluster.View, error) {
	return cluster.NewNodeView(cfg.Nodes(), log)
}

func newForwarder(cfg config.Config, p Ports, log *slog.Logger) *cluster.Forwarder {
	return cluster.NewForwarder(cfg.Nodes(), p.NodeChannel, p.Clock, p.Metrics, log)
}

func newUserSessions(view *cluster.View, fwd *cluster.Forwarder, users *authn.Service) *cluster.Sessions {
	return cluster.NewSessions(view, fwd, users)
}

func newTracker(p Ports, log *slog.Logger, view *cluster.View, kicks *cluster.Forwarder, feed *presence.Service) *cluster.Tracker {
	return cluster.NewTracker(view, p.Presence, kicks, feed, log)
}

func newKeeper(cfg config.Config, p Ports, log *slog.Logger, view *cluster.View, tenants *cluster.LateTenants,
	feed *presence.Service, tracker *cluster.Tracker,
) *cluster.Keeper {
	return cluster.NewKeeper(cfg.Nodes(), cluster.KeeperDeps{
		View:    view,
		Nodes:   p.NodeLeases,
		Leases:  p.DeliverLeases,
		Tenants: tenants.Names,
		Changes: feed,
		Held:    tracker,
		Lineage: p.RedisLineage,
		Log:     log,
	})
}

// Presence and typing (issue 31): both push through the cross-node pusher, so their pushes
// reach devices on every node as MESSAGE pushes do.

func newPresence(cfg config.Config, p Ports, log *slog.Logger, view *cluster.View, members *membership.Cache,
	pusher *cluster.LatePusher,
) *presence.Service {
	return presence.New(cfg.PresenceFeed(), presence.Deps{
		Presence: p.Presence,
		Nodes:    view,
		Records:  p.PresenceRecords,
		Settings: p.UserSettings,
		Friends:  p.Friends,
		Groups:   p.Groups,
		Members:  members,
		Pusher:   pusher,
		Clock:    p.Clock,
		Metrics:  p.Metrics,
		Log:      log,
	})
}

func newTyping(cfg config.Config, p Ports, log *slog.Logger, resolver *conversation.Resolver, members *membership.Cache,
	pusher *cluster.LatePusher,
) *typing.Service {
	return typing.New(cfg.Typing(), typing.Deps{
		Resolver: resolver,
		Members:  members,
		Pusher:   pusher,
		Clock:    p.Clock,
		Metrics:  p.Metrics,
		Log:      log,
	})
}

// newReceipts pushes P2P read and delivered receipts through the cross-node pusher, like
// typing, and answers READ_STATE from the members' watermarks (issue 31).
func newReceipts(cfg config.Config, p Ports, log *slog.Logger, resolver *conversation.Resolver, h *history.Service,
	members *membership.Cache, pusher *cluster.LatePusher, holders *nativepush.Holders,
) *receipts.Service {
	return receipts.New(cfg.ReadReceipts(), receipts.Deps{
		Resolver: resolver,
		History:  h,
		Members:  members,
		Receipts: p.ReadReceipts,
		Settings: p.UserSettings,
		Pusher:   pusher,
		Holders:  holders,
		Metrics:  p.Metrics,
		Log:      log,
	})
}

// newClusterPusher pushes to devices on this node through the TCP listener (which holds the
// WebSocket sessions too) and hands the others to their nodes.
func newClusterPusher(cfg config.Config, p Ports, log *slog.Logger, view *cluster.View, local *tcpserver.Server) *cluster.Pusher {
	return cluster.NewPusher(cfg.Nodes(), cluster.PusherDeps{
		Local:    local,
		View:     view,
		Presence: p.Presence,
		Channel:  p.NodeChannel,
		Clock:    p.Clock,
		Metrics:  p.Metrics,
		Log:      log,
	})
}

// newFallback acts on a push another node could not deliver as the deliver workers act on
// their own.
func newFallback(cfg config.Config, d deliver.Deps) *deliver.Fallback {
	return deliver.NewFallback(cfg.DeliverWorkers(), d)
}

func newReceiver(p Ports, log *slog.Logger, view *cluster.View, local *tcpserver.Server, tracker *cluster.Tracker,
	fallback *deliver.Fallback, tenants *cluster.LateTenants, users *authn.Service,
) *cluster.Receiver {
	return cluster.NewReceiver(cluster.ReceiverDeps{
		View:     view,
		Channel:  p.NodeChannel,
		Local:    local,
		Kicker:   local,
		Users:    users,
		Tracker:  tracker,
		Fallback: fallback,
		Tenants:  tenants.Names,
		Clock:    p.Clock,
		Metrics:  p.Metrics,
		Log:      log,
	})
}

// Every tenant's loops, run by core/runtime.

func newSeqHoles(cfg config.Config, p Ports, r messagereads.Reads, log *slog.Logger) *seqholes.Sweeper {
	return seqholes.New(cfg.SeqHoleSweep(), seqholes.Deps{
		Holes:   p.SeqHoles,
		Store:   r.Store,
		Shards:  p.ShardStore,
		IDs:     p.IDs,
		Clock:   p.Clock,
		Metrics: p.Metrics,
		Log:     log,
	})
}

// newDeliverDeps is what each tenant's deliver workers are built from when its loop starts;
// the fallback of the cross-node receiver acts with the same.
func newDeliverDeps(p Ports, log *slog.Logger, pusher *cluster.LatePusher, mailer *inbox.Mailer,
	members *membership.Cache, inFlight *inflight.Sends, owner *cluster.Keeper, ackWait *deliver.AckWait,
) deliver.Deps {
	return deliver.Deps{
		Queue:    p.DeliverQueue,
		Pusher:   pusher,
		Dialogs:  p.DialogStore,
		Mailer:   mailer,
		Notifier: p.PushNotifier,
		Members:  members,
		Metrics:  p.Metrics,
		Clock:    p.Clock,
		Log:      log,
		InFlight: inFlight,
		Pending:  p.PendingSeqs,
		Owner:    owner,
		Gaps:     p.ListGaps,
		AckWait:  ackWait,
	}
}

// newAckWait is the node's wait for the PUSH_ACKs of live pushes before their native alerts
// (DESIGN issue-32 "Native push"); nil when push.ack_wait is 0.
func newAckWait(cfg config.Config, p Ports, log *slog.Logger, holders *nativepush.Holders) *deliver.AckWait {
	return deliver.NewAckWait(cfg.AckWait(), deliver.AckWaitDeps{
		Holders:    holders,
		Watermarks: p.ReadReceipts,
		Marks:      p.DeliverQueue,
		Notifier:   p.PushNotifier,
		Clock:      p.Clock,
		Metrics:    p.Metrics,
		Log:        log,
	})
}

// newListRepair re-applies to the lists what a lost deliver job never did (seed 003 §20 item 13).
func newListRepair(cfg config.Config, p Ports, log *slog.Logger, h *history.Service, members *membership.Cache) *listrepair.Service {
	return listrepair.New(cfg.ListRepair(), listrepair.Deps{
		Gaps:    p.ListGaps,
		Dialogs: p.DialogStore,
		History: h,
		Mirror:  p.RouteMirror,
		Months:  p.MonthState,
		Lineage: p.RedisLineage,
		Members: members,
		Metrics: p.Metrics,
		Clock:   p.Clock,
		Log:     log,
	})
}

func newRuntime(cfg config.Config, p Ports, log *slog.Logger, manager *shardmanager.Manager, repair *routerepair.Service,
	workers deliver.Deps, migrations *migration.Service, retain *retention.Service, index *longsearch.Indexer,
	stats *dailystats.Counter, missed *deliver.Missed, holes *seqholes.Sweeper, lists *listrepair.Service,
	hooks *webhookloop.Loop,
) *runtime.Runtime {
	return runtime.NewNode(cfg.NodeLoops(), runtime.NodeDeps{
		Storage:   p.ReadyStorage,
		Manager:   manager,
		Repair:    repair,
		Deliver:   workers,
		Workers:   cfg.DeliverWorkers(),
		Migration: migrations,
		Retention: retain,
		Indexer:   index,
		Stats:     stats,
		Missed:    missed,
		SeqHoles:  holes,
		Webhooks:  hooks,
		Lists:     lists,
		Depth:     p.DeliverDepth,
		Metrics:   p.Metrics,
		Clock:     p.Clock,
		Log:       log,
	})
}
