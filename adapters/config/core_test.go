package config

import (
	"testing"
	"time"

	"github.com/imdhq/imd/core/usecase/reactions"
)

// The core's configs carry the file's values (each translation checked on one value or two).
func TestCoreConfigs(t *testing.T) {
	c := Default()
	c.Shard.SealingDays, c.Shard.RouteRepair.ReconcileMonths = 4, 6
	c.TCP.RequestTimeout, c.Deliver.MaxAttempts = 3*time.Second, 9
	c.Message.RecallWindow, c.Migration.DualRead, c.Migration.BatchSize = time.Minute, true, 77
	c.Shard.SeqHoleAfter, c.Uploads.MaxSize, c.Archive.ChunkRows = time.Hour, 5, 11
	c.Archive.ChunkCache, c.Search.Queue, c.Search.Writers, c.Cluster.Backlog = 13, 17, 3, 19
	c.Tenants = []Tenant{{Name: "acme"}}
	c.Reactions = Reactions{PerMessage: 3, PerUser: 2, PinsPerConversation: 5}
	c.Push.HideContent, c.Push.Attempts = []string{"acme"}, 7
	c.Presence.HealRate = 23
	c.Push.AckWait = 3 * time.Second

	checks := []struct {
		name string
		ok   bool
	}{
		{"shard manager", c.ShardManager().SealingDays == 4},
		{"route repairs", c.RouteRepairs().ReconcileMonths == 6},
		{"deliver send bound", c.DeliverWorkers().SendBound == 3*time.Second+sendBoundSkew && c.DeliverWorkers().MaxAttempts == 9},
		{"recall", c.Recall().RecallWindow == time.Minute},
		{"migration job", c.MigrationJob().BatchSize == 77 && bool(c.MigrationDualRead())},
		{"seq holes", c.SeqHoleSweep().After == time.Hour},
		{"uploads", c.UploadLimits().MaxSize == 5},
		{"archiving", c.Archiving().ChunkRows == 11 && c.Archiving().AheadMonths > 0},
		{"archive caches", c.ArchiveCaches().Chunks == 13},
		{"search indexing", c.SearchIndexing().Queue == 17 && c.SearchIndexing().Writers == 3},
		{"nodes", c.Nodes().Backlog == 19},
		{"native push", c.NativePush().Attempts == 7 && c.NativePush().HideContent["acme"] && !c.NativePush().HideContent["other"]},
		{"presence", c.PresenceFeed().HealRate == 23},
		{"ack wait", c.AckWait().Wait == 3*time.Second},
		{"reactions", c.ReactionLimits() == reactions.Config{PerMessage: 3, PerUser: 2, MaxPins: 5}},
		{"node loops", c.NodeLoops().Retention == c.Archive.RetentionInterval && c.NodeLoops().ShardCheck == c.Shard.CheckInterval &&
			c.NodeLoops().SeqHoleSweep == c.Shard.SeqHoleSweepInterval},
		{"tenants", len(c.TenantRegistry().Configured) == 1 && c.TenantRegistry().Configured[0].Database == c.Tenants[0].DatabaseName() &&
			c.TenantRegistry().Reserved[0] == c.Registry.Database},
	}
	for _, k := range checks {
		if !k.ok {
			t.Errorf("%s: the file's value did not carry over", k.name)
		}
	}
}
