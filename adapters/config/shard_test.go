package config

import (
	"strings"
	"testing"
	"time"
)

// TestShardSettings covers the shard lifecycle keys: defaults, env overrides of the nested
// route_repair block, and the bounds of seed 000 §3.5 on dedup retention.
func TestShardSettings(t *testing.T) {
	path := writeConfig(t, validYAML)
	tests := []struct {
		name    string
		env     []string
		check   func(Config) bool
		wantErr string
	}{
		{name: "defaults", check: func(c Config) bool {
			return c.Shard.DedupRetentionDays == 30 && c.Shard.LockTTL == 30*time.Second &&
				c.Shard.RouteRepair.Interval == time.Second && c.Shard.RouteRepair.ReconcileDeep == 5
		}},
		{name: "nested env override", env: []string{"IMD_SHARD_ROUTE_REPAIR_INTERVAL=200ms", "IMD_SHARD_ROUTE_REPAIR_RECONCILE_DEEP=0"},
			check: func(c Config) bool {
				return c.Shard.RouteRepair.Interval == 200*time.Millisecond && c.Shard.RouteRepair.ReconcileDeep == 0
			}},
		{name: "shortest retention", env: []string{"IMD_SHARD_DEDUP_RETENTION_DAYS=7"}, check: func(c Config) bool { return c.Shard.DedupRetentionDays == 7 }},
		{name: "retention too short", env: []string{"IMD_SHARD_DEDUP_RETENTION_DAYS=6"}, wantErr: "dedup_retention_days"},
		{name: "retention too long", env: []string{"IMD_SHARD_DEDUP_RETENTION_DAYS=31"}, wantErr: "dedup_retention_days"},
		{name: "no lock ttl", env: []string{"IMD_SHARD_LOCK_TTL=0s"}, wantErr: "lock_ttl"},
		{name: "no repair interval", env: []string{"IMD_SHARD_ROUTE_REPAIR_INTERVAL=0s"}, wantErr: "route_repair"},
		{name: "negative deep sample", env: []string{"IMD_SHARD_ROUTE_REPAIR_RECONCILE_DEEP=-1"}, wantErr: "route_repair"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(path, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one about %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(cfg) {
				t.Fatalf("Load = %+v, %v", cfg.Shard, err)
			}
		})
	}
}
