package archivereader_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/archivereader"
	"github.com/imdhq/imd/core/usecase/archiver"
	"github.com/imdhq/imd/ports"
)

const tenant = "t1"

var (
	m0 = month.Month(203101)
	m2 = month.Month(203103)
)

type fixture struct {
	shards *memory.ShardStore
	live   *memory.MessageStore
	blobs  *memory.BlobStore
	reader *archivereader.Reader
	store  *archivereader.Store
	states *archivereader.States
	man    *archive.Manifest
}

// newFixture stores seqs 1-40 of grp_1 in m0 — a tombstone at 9, a recalled message at 12 —
// and a deleted range [20, 25) of viewer 7, then archives m0 with chunks of 6 rows.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(m2.Start().Add(20 * 24 * time.Hour))
	f := &fixture{shards: memory.NewShardStore(), blobs: memory.NewBlobStore()}
	f.live = memory.NewMessageStore(f.shards)
	months := memory.NewMonthState(clock.Now)
	for _, m := range []month.Month{m0, m2} {
		if err := f.shards.EnsureTable(ctx, tenant, m); err != nil {
			t.Fatal(err)
		}
		if err := months.MarkReady(ctx, tenant, 0, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := months.Advance(ctx, tenant, 0, m2); err != nil {
		t.Fatal(err)
	}
	for s := int64(1); s <= 40; s++ {
		cid := fmt.Sprintf("c%d", s)
		if s == 9 {
			cid = "c8" // a reused client_msg_id: its seq is closed with a tombstone
		}
		m := message.Message{
			Topic: "grp_1", GroupID: 1, ConversationID: 5, Seq: s, MsgID: s, From: 3, ClientMsgID: cid, Type: "text",
			Content: json.RawMessage(fmt.Sprintf(`{"text":"Hello %d 你好"}`, s)), Status: message.StatusNormal, Version: 1,
			CreatedAt: m0.Start().Add(time.Duration(s) * time.Hour), Month: m0,
		}
		if _, err := f.live.Append(ctx, tenant, m, "h"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := memory.NewMessageEditor(f.shards).Modify(ctx, tenant, m0, "grp_1", 12, func(cur message.Message) (message.Revision, error) {
		cur.Status, cur.Content = message.StatusRecalled, nil
		return message.Revision{Action: message.ActionRecall, Message: cur}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dellog := memory.NewDeleteLog(f.shards)
	if err := dellog.HideRange(ctx, tenant, "grp_1", 7, 20, 25); err != nil {
		t.Fatal(err)
	}
	for _, step := range [][2]shard.State{{shard.Prepared, shard.Writable}, {shard.Writable, shard.Sealing}, {shard.Sealing, shard.Sealed}} {
		if err := f.shards.SetState(ctx, tenant, m0, step[0], step[1]); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	metrics := memory.NewMetrics()
	f.reader = archivereader.NewReader(archivereader.Config{Chunks: 2}, f.blobs, dellog, metrics)
	f.states = archivereader.NewStates(archivereader.Config{StateTTL: time.Hour}, f.shards, clock)
	rows := memory.NewMonthRows(f.shards)
	a := archiver.New(archiver.Config{ChunkRows: 6}, archiver.Deps{
		Catalog: f.shards, Manager: shardmanager.New(shardmanager.Config{}, shardmanager.Deps{Store: f.shards, Months: months, Metrics: metrics, Log: log}),
		Rows: rows, Mirror: memory.NewRouteMirror(f.shards), Store: f.live, Blobs: f.blobs, Reader: f.reader, States: f.states,
		Deliveries: memory.NewDeliverQueue(clock.Now), Repairs: noBacklog{}, References: memory.NewReferences(),
		Purged: rows, Routes: memory.NewRouteCache(), Months: months, Locks: memory.NewLocks(clock.Now), Clock: clock, Metrics: metrics, Log: log,
	})
	if f.man, err = a.Archive(ctx, tenant, m0, nil); err != nil {
		t.Fatal(err)
	}
	f.store = archivereader.NewStore(f.live, f.live, f.reader, f.states)
	return f
}

type noBacklog struct{}

func (noBacklog) Pending(context.Context, string, month.Month) (bool, error) { return false, nil }

// TestPageHasTheMonthTableSemantics: every page of the archived month equals the same page of
// the month table, whatever the bounds, direction, limit, tombstones and viewer.
func TestPageHasTheMonthTableSemantics(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var queries []message.PageQuery
	for _, b := range [][2]int64{{0, 0}, {5, 0}, {0, 30}, {8, 13}, {19, 26}, {40, 0}, {0, 1}, {39, 41}} {
		for _, desc := range []bool{false, true} {
			for _, limit := range []int{0, 1, 6, 7, 100} {
				for _, viewer := range []int64{0, 7} {
					for _, tombs := range []bool{false, true} {
						queries = append(queries, message.PageQuery{Topic: "grp_1", After: b[0], Before: b[1], Desc: desc, Limit: limit, Viewer: viewer, IncludeDeleted: tombs})
					}
				}
			}
		}
	}
	queries = append(queries, message.PageQuery{Topic: "grp_2", Limit: 10})
	for _, q := range queries {
		want, err := f.live.Page(ctx, tenant, m0, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.reader.Page(ctx, tenant, m0, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if len(want) == 0 {
			want = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v:\n got %v\nwant %v", q, seqs(got), seqs(want))
		}
	}
}

func TestGetAndSearchHaveTheMonthTableSemantics(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for seq := int64(0); seq <= 41; seq++ {
		want, wantErr := f.live.Get(ctx, tenant, m0, "grp_1", seq)
		got, err := f.reader.Get(ctx, tenant, m0, "grp_1", seq)
		if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("Get %d: %v %v, want %v %v", seq, got, err, want, wantErr)
		}
	}
	for _, q := range []ports.SearchQuery{
		{Text: "Hello 1", From: m0.Start(), To: m0.End(), Limit: 50},
		{Topic: "grp_1", Text: "你好", From: m0.Start().Add(10 * time.Hour), To: m0.Start().Add(20 * time.Hour), Limit: 5},
		{Topic: "grp_2", Text: "Hello", From: m0.Start(), To: m0.End(), Limit: 5},
	} {
		want, err := f.live.Search(ctx, tenant, m0, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.reader.Search(ctx, tenant, m0, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			want = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Search %+v:\n got %v\nwant %v", q, seqs(got), seqs(want))
		}
	}
}

// TestStoreRoutesArchivedMonthsToTheArchive: the decorator reads an archived month from the
// archive even with its table gone, and other months from the store it wraps.
func TestStoreRoutesArchivedMonthsToTheArchive(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := memory.NewMonthRows(f.shards).DropTable(ctx, tenant, m0); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.Get(ctx, tenant, m0, "grp_1", 3)
	if err != nil || got.Seq != 3 {
		t.Fatalf("Get from the archive: %v %v", got, err)
	}
	page, err := f.store.Page(ctx, tenant, m0, message.PageQuery{Topic: "grp_1", Limit: 100})
	if err != nil || len(page) != 39 {
		t.Fatalf("Page from the archive: %d messages, %v", len(page), err)
	}
	if _, err := f.store.Get(ctx, tenant, m2, "grp_1", 3); err == nil {
		t.Fatal("a live month read from the archive")
	}
}

// TestDamagedChunkIsRefused: a chunk whose bytes differ from the manifest's hash is never
// decoded into answers.
func TestDamagedChunkIsRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.blobs.Corrupt(f.man.Topics[0].Chunks[0].Key)
	if _, err := f.reader.Get(ctx, tenant, m0, "grp_1", 2); err == nil {
		t.Fatal("a damaged chunk was read")
	}
}

// TestChunkCacheServesRepeatedReads: paging through the month reads each chunk once.
func TestChunkCacheServesRepeatedReads(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for range 3 {
		if _, err := f.reader.Get(ctx, tenant, m0, "grp_1", 2); err != nil {
			t.Fatal(err)
		}
	}
	key := f.man.Topics[0].Chunks[0].Key
	f.blobs.Corrupt(key) // a read that reached the store now fails
	if _, err := f.reader.Get(ctx, tenant, m0, "grp_1", 3); err != nil {
		t.Fatalf("a cached chunk was read again: %v", err)
	}
	f.reader.Forget(tenant, m0)
	if _, err := f.reader.Get(ctx, tenant, m0, "grp_1", 3); err == nil {
		t.Fatal("Forget kept the chunk")
	}
}

func seqs(ms []message.Message) []int64 {
	var out []int64
	for _, m := range ms {
		out = append(out, m.Seq)
	}
	return out
}
