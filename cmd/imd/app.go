package main

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/core/kit/inflight"
	"github.com/imdhq/imd/core/loop/cluster"
	"github.com/imdhq/imd/core/usecase/tenantregistry"
)

// Options is the whole server: the real adapters, then the application around them.
//
// Where to look: ports.go binds every port to its adapter (Ports), usecases.go and
// transports.go build each component from Ports and the components it calls, filling its Deps
// by name, and lifecycle.go is the one place that starts and stops them, in order. fx finds
// the order of construction from the constructors' parameters; nothing else is bound by type.
func Options(cfg config.Config, log *slog.Logger) fx.Option {
	return fx.Options(Adapters(), Application(cfg, log))
}

// Application is the core, the runtime and the transports over Ports; tests assemble it
// around the memory fakes instead of Adapters (app_test.go).
func Application(cfg config.Config, log *slog.Logger) fx.Option {
	return fx.Options(
		fx.Supply(cfg, log),
		fx.Provide(
			newMessageReads,

			// The social graph, the tenant registry, authentication, uploads and reports.
			newDailyStats, newMembership, newResolver, newDirectory, newTenantRegistry, newAuthn, newUploads,
			newReports,
			// Event webhooks, bots and native push tokens (issue 32).
			newWebhooks, newBots, newPushTokenRegistry, newTokenHolders,

			// The send path and what reads and changes messages.
			newShardManager, newRouteRepairs, newSend, newHistory, newAdmin, newModify, newReactions, newForward, newInbox, newMailer,
			newRead, newMissed,
			// One per node: the send path and the deliver consumers of this process share it.
			inflight.New,

			// Archiving and retention, the references into messages (favorites, reply previews,
			// group files) and the long-term search index (seed 000 §6.6, §8, §10).
			newArchiveReader, newArchiveStates, newIndexer, newGroupFiles, newArchiver, newRetention, newReindex,
			newJobs, newSearcher, newFavorites, newReplies,

			// The legacy single-table migration (seed 000 §9).
			newMigration,

			// Several nodes on one tenant (DESIGN §11).
			newNodeView, newForwarder, newUserSessions, newTracker, newKeeper, newClusterPusher, newFallback, newReceiver,
			cluster.NewLoops, newLatePusher, newLateTenants,
			// Presence, typing and read receipts (issue 31).
			newPresence, newTyping, newReceipts,

			// Every tenant's loops, run by core/runtime.
			newSeqHoles, newListRepair, newWebhookLoop, newAckWait, newDeliverDeps, newRuntime,

			// The listeners.
			newTCPServer, newWebSocket, newHTTPServer, newSocialOps, newShardOps, newArchiveOps, newReferenceOps,
			newNodeOps,
		),
		fx.Invoke(closeCycles, lifecycle),
	)
}

func newLatePusher() *cluster.LatePusher   { return &cluster.LatePusher{} }
func newLateTenants() *cluster.LateTenants { return &cluster.LateTenants{} }

// closeCycles binds the two components built before what they forward to exists: the deliver
// side pushes through the cross-node pusher, which pushes through the TCP listener, which needs
// the use cases the deliver side is part of; the cluster loops list the tenants of the
// registry, which activates tenants in the runtime, whose deliver workers need the keeper.
func closeCycles(late *cluster.LatePusher, pusher *cluster.Pusher, names *cluster.LateTenants, reg *tenantregistry.Registry) {
	late.Bind(pusher)
	names.Bind(reg.Names)
}
