package admin_test

import (
	"context"
	"testing"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/usecase/admin"
)

// TestShardsMarkDroppedTables: an archived month whose table was dropped is listed as such,
// not under a table that no longer exists; one whose table is still there is not.
func TestShardsMarkDroppedTables(t *testing.T) {
	ctx := context.Background()
	const tenant = "acme"
	shards := memory.NewShardStore()
	rows := memory.NewMonthRows(shards)
	jan, feb, mar := month.Month(203001), month.Month(203002), month.Month(203003)
	for _, m := range []month.Month{jan, feb, mar} {
		if err := shards.EnsureTable(ctx, tenant, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []month.Month{jan, feb} {
		for _, step := range [][2]shard.State{{shard.Prepared, shard.Writable}, {shard.Writable, shard.Sealing}, {shard.Sealing, shard.Sealed}, {shard.Sealed, shard.Archived}} {
			if err := shards.SetState(ctx, tenant, m, step[0], step[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rows.DropTable(ctx, tenant, jan); err != nil {
		t.Fatal(err)
	}
	svc := admin.New(admin.Deps{Shards: shards, Tables: rows, Tenants: func(string) bool { return true }})
	infos, err := svc.Shards(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	want := map[month.Month]bool{jan: true, feb: false, mar: false}
	for _, in := range infos {
		if in.TableDropped != want[in.Month] || in.Table == "" {
			t.Errorf("%s (%s): table %q dropped %v, want dropped %v", in.Month, in.State, in.Table, in.TableDropped, want[in.Month])
		}
	}
	if len(infos) != 3 {
		t.Fatalf("listed %d months", len(infos))
	}
}
