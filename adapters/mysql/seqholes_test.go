package mysql

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/loop/seqholes"
)

// TestSeqHoleSweepOnMariaDB runs the sweeper over the real store: the holes older than its
// bound become tombstones a sync returns, a younger one waits.
func TestSeqHoleSweepOnMariaDB(t *testing.T) {
	c, tenant := newTestCluster(t)
	store := NewMessageStore(c, MessageStoreOptions{})
	t.Cleanup(func() { store.Close() })
	shards := NewShardStore(c)
	ctx := context.Background()
	m := month.Month(203003)
	if err := shards.EnsureTable(ctx, tenant, m); err != nil {
		t.Fatal(err)
	}
	if err := shards.SetState(ctx, tenant, m, shard.Prepared, shard.Writable); err != nil {
		t.Fatal(err)
	}
	clock := memory.NewClock(m.Start().Add(2 * time.Hour))
	for _, r := range []struct {
		seq int64
		age time.Duration
	}{{2, time.Hour}, {4, time.Hour}, {6, time.Minute}} {
		msg := message.Message{
			Topic: "grp_1", GroupID: 1, Seq: r.seq, MsgID: 9000 + r.seq, From: 7, ClientMsgID: fmt.Sprintf("c%d", r.seq),
			Type: "text", Content: json.RawMessage(`{"text":"x"}`), Status: message.StatusNormal, Version: 1,
			CreatedAt: clock.Now().Add(-r.age), Month: m,
		}
		if _, err := store.Append(ctx, tenant, msg, "h"); err != nil {
			t.Fatalf("append seq %d: %v", r.seq, err)
		}
	}
	metrics := memory.NewMetrics()
	sweeper := seqholes.New(seqholes.Config{After: 10 * time.Minute}, seqholes.Deps{
		Holes: store, Store: store, Shards: shards, IDs: memory.NewIDs(clock), Clock: clock, Metrics: metrics,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	closed, err := sweeper.Sweep(ctx, tenant)
	if err != nil || closed != 2 {
		t.Fatalf("Sweep = %d, %v; want seqs 1 and 3 closed, 5 (younger than the bound) left", closed, err)
	}
	rows, err := store.Page(ctx, tenant, m, message.PageQuery{Topic: "grp_1", Limit: 10, IncludeDeleted: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range rows {
		if r.Status == message.StatusDeleted {
			got = append(got, -r.Seq)
		} else {
			got = append(got, r.Seq)
		}
	}
	if want := []int64{-1, 2, -3, 4, 6}; !slices.Equal(got, want) {
		t.Fatalf("seqs after the sweep = %v, want %v (negative: tombstone)", got, want)
	}
	if again, err := sweeper.Sweep(ctx, tenant); err != nil || again != 0 {
		t.Fatalf("second Sweep = %d, %v; want nothing left to close", again, err)
	}
}
