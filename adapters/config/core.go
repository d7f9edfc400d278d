package config

import (
	"github.com/imdhq/imd/core/loop/retention"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/authn"
	"github.com/imdhq/imd/core/usecase/send"
	"time"

	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/kit/drain"
	"github.com/imdhq/imd/core/loop/cluster"
	"github.com/imdhq/imd/core/loop/deliver"
	"github.com/imdhq/imd/core/loop/listrepair"
	"github.com/imdhq/imd/core/loop/migration"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/loop/seqholes"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/loop/webhooks"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/store/archivereader"
	"github.com/imdhq/imd/core/store/messagereads"
	"github.com/imdhq/imd/core/usecase/archiver"
	"github.com/imdhq/imd/core/usecase/longsearch"
	"github.com/imdhq/imd/core/usecase/modify"
	"github.com/imdhq/imd/core/usecase/nativepush"
	"github.com/imdhq/imd/core/usecase/presence"
	"github.com/imdhq/imd/core/usecase/reactions"
	"github.com/imdhq/imd/core/usecase/receipts"
	"github.com/imdhq/imd/core/usecase/tenantregistry"
	"github.com/imdhq/imd/core/usecase/typing"
	"github.com/imdhq/imd/core/usecase/uploads"
)

// The core's configs, each as its use case's constructor takes it: cmd/imd provides these
// methods to the graph as they are.

// sendBoundSkew covers the node clocks' difference when a consumer bounds a send that runs
// on another node by the request timeout (deliver.Config.SendBound).
const sendBoundSkew = 2 * time.Second

// recentRevocationTTL is how long a node's per-request (HTTP) token checks reuse a "not
// revoked" answer of the deny-list: a logout acknowledged by another node is refused here at
// most this long after (README "Losing Redis"); a connection's AUTH always reads the deny-list.
const recentRevocationTTL = 5 * time.Second

// knownUserTTL is how long a node reuses the directory's "this user exists" for token checks
// (issue 33): the bound on how long a user removed from t_users keeps authenticating here.
const knownUserTTL = 30 * time.Second

// Authn bounds token checks: recent answers, and revocations kept as long as a token may live.
func (Config) Authn() authn.Config {
	return authn.Config{RecentTTL: recentRevocationTTL, MaxTTL: admin.MaxTokenTTL, UserTTL: knownUserTTL}
}

// Send bounds the send path: a client's pre-generated ids, and its pending marks, which live as
// long as the send may (its request timeout bounds every step, on every transport).
func (c Config) Send() send.Config {
	return send.Config{
		MsgIDWindow: time.Duration(c.Message.MsgIDExpireMS) * time.Millisecond,
		PendingFor:  c.TCP.RequestTimeout,
		MaxDuration: c.TCP.RequestTimeout,
	}
}

// ShardManager is the month tables' lifecycle.
func (c Config) ShardManager() shardmanager.Config {
	s := c.Shard
	return shardmanager.Config{SealingDays: s.SealingDays, LockTTL: s.LockTTL, DedupPurgeBatch: s.DedupPurgeBatch}
}

// RouteRepairs is the route repair queue, the tenant-wide rebuild and reconciliation.
func (c Config) RouteRepairs() routerepair.Config {
	r := c.Shard.RouteRepair
	return routerepair.Config{
		Interval: r.Interval, Batch: r.Batch, FallbackLimit: r.FallbackLimit, RebuildBatch: r.RebuildBatch,
		ReconcileInterval: r.ReconcileInterval, ReconcileSample: r.ReconcileSample, ReconcileDeep: r.ReconcileDeep,
		ReconcileMonths: r.ReconcileMonths,
	}
}

// DeliverWorkers is the deliver consumers'; a send on another node is bounded by this node's
// request timeout and the clocks' skew.
func (c Config) DeliverWorkers() deliver.Config {
	d := c.Deliver
	return deliver.Config{TakeTimeout: d.TakeTimeout, DoneTTL: d.DoneTTL, MaxAttempts: d.MaxAttempts, ReorderWait: d.ReorderWait,
		SendBound: c.TCP.RequestTimeout + sendBoundSkew, RepairWindow: d.RepairWindow}
}

// AckWait is how long a live push waits for its PUSH_ACK before the native alert (push.ack_wait).
func (c Config) AckWait() deliver.AckWaitConfig {
	return deliver.AckWaitConfig{Wait: c.Push.AckWait}
}

// ListRepair is the list repair's pace and window (deliver.repair_*).
func (c Config) ListRepair() listrepair.Config {
	d := c.Deliver
	return listrepair.Config{Interval: d.RepairInterval, Settle: d.RepairSettle, Window: d.RepairWindow,
		Lookback: d.HealLookback, Markers: d.DoneTTL}
}

// Recall is how long a sender may recall a message.
func (c Config) Recall() modify.Config { return modify.Config{RecallWindow: c.Message.RecallWindow} }

// MigrationJob is the legacy table's copy job.
func (c Config) MigrationJob() migration.Config {
	m := c.Migration
	return migration.Config{BatchSize: m.BatchSize, RowsPerSecond: m.RateCap(), PollInterval: m.PollInterval}
}

// MigrationDualRead says whether this node merges the legacy table into reads.
func (c Config) MigrationDualRead() migration.DualReading {
	return migration.DualReading(c.Migration.DualRead)
}

// Drain is the stop's wait for the balancer, then its spread of the clients' reconnects
// (docs/NODES.md "Rolling restarts").
func (c Config) Drain() drain.Config {
	return drain.Config{UnreadyGrace: c.Shutdown.UnreadyGrace, Window: c.Shutdown.DrainWindow}
}

// MessageReads says whether every message read merges the legacy table (seed 000 §9) and
// how long a tenant's legacy status is trusted.
func (c Config) MessageReads() messagereads.Config {
	return messagereads.Config{DualRead: c.Migration.DualRead, StatusTTL: c.Migration.StatusTTL}
}

// WebhookDelivery is the pace of the webhook loop.
func (c Config) WebhookDelivery() webhooks.Config {
	w := c.Webhooks
	return webhooks.Config{Settle: w.Settle, FirstRetry: w.FirstRetry, MaxBackoff: w.MaxBackoff, MaxAttempts: w.MaxAttempts, KeepEvents: w.KeepEvents}
}

// NativePush is the push section as the native push sender's configuration: its pace and the
// tenants whose alerts hide the message text.
func (c Config) NativePush() nativepush.Config {
	p := c.Push
	hide := make(map[string]bool, len(p.HideContent))
	for _, t := range p.HideContent {
		hide[t] = true
	}
	return nativepush.Config{Queue: p.Queue, Attempts: p.Attempts, Backoff: p.Backoff, MaxBackoff: p.MaxBackoff, HideContent: hide}
}

// SeqHoleSweep is how old a seq hole must be before the sweeper closes it.
func (c Config) SeqHoleSweep() seqholes.Config { return seqholes.Config{After: c.Shard.SeqHoleAfter} }

// UploadLimits bounds an upload, its signed URLs and the image read for its thumbnail.
func (c Config) UploadLimits() uploads.Config {
	u := c.Uploads
	return uploads.Config{MaxSize: u.MaxSize, URLTTL: u.URLTTL, ThumbSide: u.Thumbnails.Side, ThumbMaxBytes: u.Thumbnails.MaxBytes, ThumbWorkers: u.Thumbnails.Workers}
}

// Archiving is the archiver's; it keeps the months the shard manager creates ahead.
func (c Config) Archiving() archiver.Config {
	return archiver.Config{ChunkRows: c.Archive.ChunkRows, AheadMonths: shardmanager.DefaultAheadMonths}
}

// Retention is the default retention policy and each tenant's own.
func (c Config) Retention() retention.Config {
	return retention.Config{Fallback: c.Archive.Retention.Policy(), Tenants: c.Archive.TenantPolicies()}
}

// ArchiveCaches sizes the archive reader's caches.
func (c Config) ArchiveCaches() archivereader.Config {
	return archivereader.Config{Manifests: c.Archive.ManifestCache, Chunks: c.Archive.ChunkCache, StateTTL: c.Archive.StateTTL}
}

// SearchIndexing bounds the index updates waiting after COMMIT and the writes at once.
func (c Config) SearchIndexing() longsearch.IndexerConfig {
	return longsearch.IndexerConfig{Queue: c.Search.Queue, Writers: c.Search.Writers}
}

// Nodes is the node lease and the cross-node push backlog.
func (c Config) Nodes() cluster.Config {
	return cluster.Config{LeaseTTL: c.Cluster.LeaseTTL, Backlog: c.Cluster.Backlog, NodeID: c.NodeID}
}

// PresenceFeed is the presence section as the presence use case's configuration.
func (c Config) PresenceFeed() presence.Config {
	p := c.Presence
	return presence.Config{GroupLimit: p.GroupLimit, HealRate: p.HealRate, HealQueue: p.HealQueue}
}

// Typing is the presence section as the typing use case's configuration.
func (c Config) Typing() typing.Config {
	p := c.Presence
	return typing.Config{GroupLimit: p.TypingGroupLimit, Expires: p.TypingExpires, PerDevice: p.TypingPerDevice, Window: p.TypingWindow}
}

// ReadReceipts is the receipts section as the receipts use case's configuration.
func (c Config) ReadReceipts() receipts.Config {
	return receipts.Config{GroupLimit: c.Receipts.GroupLimit}
}

// ReactionLimits is the reactions section as the reactions use case's configuration.
func (c Config) ReactionLimits() reactions.Config {
	r := c.Reactions
	return reactions.Config{PerMessage: r.PerMessage, PerUser: r.PerUser, MaxPins: r.PinsPerConversation}
}

// TenantRegistry is the configured tenants; the registry's own database is no tenant's name.
func (c Config) TenantRegistry() tenantregistry.Config {
	configured := make([]tenant.Info, len(c.Tenants))
	for i, t := range c.Tenants {
		configured[i] = tenant.Info{Name: t.Name, Database: t.DatabaseName(), DSN: t.DSN}
	}
	return tenantregistry.Config{Configured: configured, Reserved: []string{c.Registry.Database}}
}

// NodeLoops is how often the runtime's periodic loops run.
func (c Config) NodeLoops() runtime.NodeConfig {
	return runtime.NodeConfig{ShardCheck: c.Shard.CheckInterval, SeqHoleSweep: c.Shard.SeqHoleSweepInterval, Retention: c.Archive.RetentionInterval,
		Webhooks: c.Webhooks.Interval}
}
