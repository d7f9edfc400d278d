package seqholes_test

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

const tenant = "acme"

var (
	monthA = month.Month(202609)
	monthB = month.Month(202610)
	start  = time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
)

type fixture struct {
	clock   *memory.Clock
	store   *memory.MessageStore
	shards  *memory.ShardStore
	metrics *memory.Metrics
	sweeper *seqholes.Sweeper
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{clock: memory.NewClock(start), shards: memory.NewShardStore(), metrics: memory.NewMetrics()}
	f.store = memory.NewMessageStore(f.shards)
	for _, m := range []month.Month{monthA, monthB} {
		if err := f.shards.EnsureTable(context.Background(), tenant, m); err != nil {
			t.Fatal(err)
		}
		if err := f.shards.SetState(context.Background(), tenant, m, shard.Prepared, shard.Writable); err != nil {
			t.Fatal(err)
		}
	}
	f.sweeper = seqholes.New(seqholes.Config{After: 10 * time.Minute}, seqholes.Deps{
		Holes: f.store, Store: f.store, Shards: f.shards, IDs: memory.NewIDs(f.clock), Clock: f.clock,
		Metrics: f.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	return f
}

// add appends seq of topic in m, created now.
func (f *fixture) add(t *testing.T, topic string, m month.Month, sq int64) {
	t.Helper()
	msg := message.Message{
		Topic: topic, GroupID: 1, Seq: sq, MsgID: 1000 + sq, From: 7, ClientMsgID: fmt.Sprintf("c%s%d", topic, sq),
		Type: "text", Content: json.RawMessage(`{"text":"x"}`), Status: message.StatusNormal, Version: 1,
		CreatedAt: f.clock.Now(), Month: m,
	}
	if _, err := f.store.Append(context.Background(), tenant, msg, "h"); err != nil {
		t.Fatalf("append %s seq %d: %v", topic, sq, err)
	}
}

// rows lists the topic's seqs in m, tombstones marked negative.
func (f *fixture) rows(t *testing.T, topic string, m month.Month) []int64 {
	t.Helper()
	page, err := f.store.Page(context.Background(), tenant, m, message.PageQuery{Topic: topic, Limit: 100, IncludeDeleted: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, r := range page {
		if r.Status == message.StatusDeleted {
			out = append(out, -r.Seq)
		} else {
			out = append(out, r.Seq)
		}
	}
	return out
}

func (f *fixture) sweep(t *testing.T) int {
	t.Helper()
	n, err := f.sweeper.Sweep(context.Background(), tenant)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	return n
}

func TestSweepClosesOldHolesOnly(t *testing.T) {
	f := newFixture(t)
	f.add(t, "grp_1", monthA, 2) // seq 1 lost
	f.add(t, "grp_1", monthA, 4) // seq 3 lost
	f.clock.Advance(11 * time.Minute)
	f.add(t, "grp_1", monthA, 7) // seqs 5, 6 lost just now: a retry may still come
	f.add(t, "grp_1", monthB, 9) // seq 8 lost across the months, just now

	if n := f.sweep(t); n != 2 {
		t.Fatalf("first sweep closed %d seqs, want 2 (seqs 1 and 3)", n)
	}
	if got, want := f.rows(t, "grp_1", monthA), []int64{-1, 2, -3, 4, 7}; !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", monthA, got, want)
	}
	f.clock.Advance(11 * time.Minute)
	if n := f.sweep(t); n != 3 {
		t.Fatalf("second sweep closed %d seqs, want 3 (5, 6 and 8)", n)
	}
	if got, want := f.rows(t, "grp_1", monthB), []int64{-8, 9}; !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v: a hole between months is closed in the later one", monthB, got, want)
	}
	if n := f.sweep(t); n != 0 {
		t.Fatalf("a third sweep closed %d seqs, want none", n)
	}
	if got := f.metrics.Count("group_message_seq_hole_closed_total"); got != 5 {
		t.Fatalf("seq_hole_closed_total = %v, want 5", got)
	}
}

func TestSweepLeavesMonthsThatTakeNoWrites(t *testing.T) {
	f := newFixture(t)
	f.add(t, "grp_1", monthA, 2)
	ctx := context.Background()
	for _, s := range [][2]shard.State{{shard.Writable, shard.Sealing}, {shard.Sealing, shard.Sealed}} {
		if err := f.shards.SetState(ctx, tenant, monthA, s[0], s[1]); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Advance(time.Hour)
	if n := f.sweep(t); n != 0 {
		t.Fatalf("sweep closed %d seqs of a sealed month, want none", n)
	}
}

func TestSweepBudget(t *testing.T) {
	f := newFixture(t)
	f.sweeper = seqholes.New(seqholes.Config{After: time.Minute, MaxPerRun: 3}, seqholes.Deps{
		Holes: f.store, Store: f.store, Shards: f.shards, IDs: memory.NewIDs(f.clock), Clock: f.clock,
		Metrics: f.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	f.add(t, "grp_1", monthA, 6)
	f.clock.Advance(time.Hour)
	if n := f.sweep(t); n != 3 {
		t.Fatalf("sweep closed %d seqs, want its budget of 3", n)
	}
	if n := f.sweep(t); n != 2 {
		t.Fatalf("the next sweep closed %d seqs, want the 2 left", n)
	}
}
