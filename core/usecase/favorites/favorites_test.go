package favorites_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/favorites"
	"github.com/imdhq/imd/core/usecase/history"
)

const tenant = "t1"

func TestFavoritesRecheckWhatTheUserMayRead(t *testing.T) {
	ctx := context.Background()
	m0 := month.Month(203101)
	clock := memory.NewClock(m0.Start().Add(time.Hour))
	shards := memory.NewShardStore()
	store, dellog, dir := memory.NewMessageStore(shards), memory.NewDeleteLog(shards), memory.NewDirectory()
	if err := shards.EnsureTable(ctx, tenant, m0); err != nil {
		t.Fatal(err)
	}
	if err := shards.SetState(ctx, tenant, m0, shard.Prepared, shard.Writable); err != nil {
		t.Fatal(err)
	}
	months := memory.NewMonthState(clock.Now)
	if err := months.MarkReady(ctx, tenant, 0, m0); err != nil {
		t.Fatal(err)
	}
	if _, err := months.Advance(ctx, tenant, 0, m0); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 1, Owner: 1}, 100, []int64{2}, 0); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 3; seq++ {
		m := message.Message{Topic: "grp_1", Seq: seq, MsgID: seq, From: 1, ClientMsgID: string(rune('a' + seq)), Type: "text",
			Content: json.RawMessage(`{"text":"x"}`), Status: message.StatusNormal, Version: 1, CreatedAt: clock.Now(), Month: m0}
		if _, err := store.Append(ctx, tenant, m, "h"); err != nil {
			t.Fatal(err)
		}
	}
	resolver := conversation.NewResolver(dir, memory.NewIDs(clock), membership.New(dir, clock, 0))
	h := history.New(history.Deps{Store: store, Routes: memory.NewRouteCache(), Months: months, Metrics: memory.NewMetrics(),
		Resolver: resolver, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	svc := favorites.New(favorites.Deps{Store: memory.NewReferences(), History: h, Hidden: dellog, Clock: clock})

	for _, tc := range []struct {
		user int64
		seq  int64
		code apperr.Code
	}{{2, 1, apperr.OK}, {2, 2, apperr.OK}, {2, 3, apperr.OK}, {2, 9, apperr.NotFound}, {3, 1, apperr.Forbidden}} {
		if _, err := svc.Add(ctx, tenant, tc.user, "grp_1", tc.seq); apperr.CodeOf(err) != tc.code {
			t.Fatalf("user %d saves seq %d: %v, want %d", tc.user, tc.seq, err, tc.code)
		}
	}
	first, err := svc.Add(ctx, tenant, 2, "grp_1", 1)
	if err != nil || first.ID != 1 {
		t.Fatalf("saving again: %+v %v", first, err)
	}
	if err := dellog.HideRange(ctx, tenant, "grp_1", 2, 2, 3); err != nil {
		t.Fatal(err)
	}
	page, err := svc.List(ctx, tenant, 2, 0, 10)
	if err != nil || len(page) != 3 {
		t.Fatalf("List: %v %v", page, err)
	}
	for _, want := range []struct {
		seq      int64
		readable bool
	}{{3, true}, {2, false}, {1, true}} {
		f := page[0]
		page = page[1:]
		if f.Seq != want.seq || (f.Message != nil) != want.readable {
			t.Fatalf("favorite seq %d readable %v, want seq %d readable %v", f.Seq, f.Message != nil, want.seq, want.readable)
		}
	}
	if err := dir.RemoveMembers(ctx, tenant, 1, []int64{2}, 0); err != nil {
		t.Fatal(err)
	}
	page, err = svc.List(ctx, tenant, 2, 0, 10)
	if err != nil || len(page) != 3 || page[0].Message != nil || page[2].Message != nil {
		t.Fatalf("after leaving the group every favorite must be unreadable: %v", err)
	}
	if err := svc.Remove(ctx, tenant, 2, "grp_1", 1); err != nil {
		t.Fatal(err)
	}
	if err := svc.Remove(ctx, tenant, 2, "grp_1", 1); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("removing twice: %v", err)
	}
}
