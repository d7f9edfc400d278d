package runtime

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/tenant"
)

func TestANodeRunsEveryLoopAndRetentionOnlyWhenScheduled(t *testing.T) {
	tenantLoops := []string{"shard_manager", "route_repair", "deliver"}
	nodeLoops := []string{"migration", "search_index", "stats_flush", "missed_pushes", "deliver_depth", "seq_holes", "webhooks", "list_repair"}
	for _, tc := range []struct {
		name      string
		retention time.Duration
		want      []string
	}{
		{"no retention interval", 0, nodeLoops},
		{"retention every hour", time.Hour, append(slices.Clone(nodeLoops), "retention")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d NodeDeps
			cfg := NodeConfig{ShardCheck: time.Minute, SeqHoleSweep: time.Minute, Retention: tc.retention}
			var node, per []string
			for _, l := range d.nodeLoops(cfg) {
				node = append(node, l.Name)
			}
			for _, l := range d.tenantLoops(cfg) {
				per = append(per, l.Name)
			}
			if !slices.Equal(node, tc.want) || !slices.Equal(per, tenantLoops) {
				t.Errorf("node loops %v, tenant loops %v", node, per)
			}
		})
	}
}

func TestANodeRefusesATenantWhoseStorageFails(t *testing.T) {
	failed := errors.New("database unreachable")
	d := NodeDeps{
		Storage: func(context.Context, tenant.Info) error { return failed },
		Log:     slog.New(slog.DiscardHandler),
	}
	// The month tables are not touched (Manager is nil): storage comes first.
	if err := d.prepare(context.Background(), tenant.Info{Name: "acme"}); !errors.Is(err, failed) {
		t.Errorf("prepare = %v, want the storage's error", err)
	}
}
