package http

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/ports"
)

// shardStack serves the shard lifecycle routes over the in-memory adapters.
type shardStack struct {
	*harness
	shards       *memory.ShardStore
	store        *memory.MessageStore
	routes       *memory.RouteCache
	compensation *memory.CompensationList
}

func newShardStack(t *testing.T) *shardStack {
	t.Helper()
	clock := memory.NewClock(time.Date(2026, 11, 15, 12, 0, 0, 0, time.UTC))
	log := slog.New(slog.DiscardHandler)
	s := &shardStack{
		shards: memory.NewShardStore(), routes: memory.NewRouteCache(), compensation: memory.NewCompensationList(),
	}
	s.store = memory.NewMessageStore(s.shards)
	months, metrics := memory.NewMonthState(clock.Now), memory.NewMetrics()
	manager := shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{
		Store: s.shards, Months: months, Compensation: s.compensation, Metrics: metrics, Log: log,
	})
	if err := manager.Ensure(context.Background(), "default"); err != nil {
		t.Fatal(err)
	}
	repair := routerepair.New(routerepair.Config{}, routerepair.Deps{
		Queue: memory.NewRepairQueue(), Store: s.store, Mirror: memory.NewRouteMirror(s.shards), Routes: s.routes,
		Months: months, Metrics: metrics, Log: log,
	})
	s.harness = newHarness(t, Config{AdminKey: adminKey}, Deps{Shards: ShardOps{Manager: manager, Repair: repair}})
	return s
}

func (s *shardStack) call(method, path, body string, out any) {
	s.t.Helper()
	rec := s.do(method, "/admin/v1/tenants/default"+path, body)
	if rec.Code != http.StatusOK {
		s.t.Fatalf("%s %s = %d %s", method, path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		s.t.Fatalf("%s %s body %s: %v", method, path, rec.Body, err)
	}
}

func TestRebuildTenantRoutes(t *testing.T) {
	s := newShardStack(t)
	ctx := context.Background()
	const nov = month.Month(202611)
	for i, topic := range []string{"grp_1", "grp_2", "p2p_1_2"} {
		m := message.Message{Topic: topic, Seq: 1, MsgID: int64(i + 1), From: 1, ClientMsgID: "c", Type: "text",
			Status: message.StatusNormal, Version: 1, CreatedAt: nov.Start(), Month: nov}
		if _, err := s.store.Append(ctx, "default", m, "h"); err != nil {
			t.Fatal(err)
		}
	}
	var out struct {
		Topics int `json:"topics"`
	}
	s.call("POST", "/routes/rebuild", "", &out)
	if out.Topics != 3 {
		t.Fatalf("rebuilt %d topics, want 3", out.Topics)
	}
	if rt, found, err := s.routes.Segments(ctx, "default", "p2p_1_2"); err != nil || !found || len(rt) != 1 || rt[0] != (route.Segment{
		Month: nov, MinSeq: 1, MaxSeq: 1, Count: 1, MinCreatedAt: nov.Start(), MaxCreatedAt: nov.Start(),
	}) {
		t.Fatalf("route after rebuild: %+v %v %v", rt, found, err)
	}
}

func TestArchiveMonth(t *testing.T) {
	s := newShardStack(t)
	ctx := context.Background()
	const oct = month.Month(202610) // sealing after the fixture's Ensure
	s.fails("POST", "/shards/202610/archive", "", http.StatusConflict, apperr.Conflict)
	if err := s.shards.SetState(ctx, "default", oct, shard.Sealing, shard.Sealed); err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	s.call("POST", "/shards/202610/archive", "", &out)
	if out["shard_month"] != "202610" || out["status"] != "archived" {
		t.Fatalf("archive answered %v", out)
	}
	s.call("POST", "/shards/202610/archive", "", &out) // again: a no-op
	s.fails("POST", "/shards/202001/archive", "", http.StatusNotFound, apperr.NotFound)
	for _, bad := range []string{"202613", "2026-10", "im_group_messages_202610", "x"} {
		s.fails("POST", "/shards/"+bad+"/archive", "", http.StatusBadRequest, apperr.InvalidArgument)
	}
}

func (s *shardStack) fails(method, path, body string, status int, code apperr.Code) {
	s.t.Helper()
	wantError(s.t, s.do(method, "/admin/v1/tenants/default"+path, body), status, code)
}

func TestListCompensation(t *testing.T) {
	s := newShardStack(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 8, 1, 2, 3, 0, time.UTC)
	for i := range 3 {
		m := message.Message{Topic: "grp_1", Seq: int64(i + 1), MsgID: int64(100 + i), From: 1, ClientMsgID: "c", Type: "text",
			Content: json.RawMessage(`{"text":"late"}`), Status: message.StatusNormal, Version: 1, CreatedAt: at, Month: 202610}
		if _, err := s.compensation.Push(ctx, "default", ports.Compensation{Message: m, Reason: "sealed", At: at}); err != nil {
			t.Fatal(err)
		}
	}
	var out compensationResponse
	s.call("GET", "/compensation?limit=2", "", &out)
	if out.Total != 3 || len(out.Entries) != 2 {
		t.Fatalf("compensation = %+v, want 2 of 3", out)
	}
	e := out.Entries[0]
	if e.ShardMonth != "202610" || e.Reason != "sealed" || e.At != at.UnixMilli() || e.Message.MsgID != 100 ||
		e.Message.Seq != 1 || string(e.Message.Content) != `{"text":"late"}` {
		t.Fatalf("entry = %+v", e)
	}
	s.call("GET", "/compensation", "", &out)
	if len(out.Entries) != 3 {
		t.Fatalf("default limit listed %d", len(out.Entries))
	}
	for _, bad := range []string{"0", "1001", "-1", "x"} {
		s.fails("GET", "/compensation?limit="+bad, "", http.StatusBadRequest, apperr.InvalidArgument)
	}
}

func TestListShardsGivesTheWritableMonthItsSealTime(t *testing.T) {
	s := newStack(t)
	var got struct {
		Shards []shardRow `json:"shards"`
	}
	s.ok("GET", "/shards", "", &got)
	// The stack's clock is in 202611, which is writable; 202610 is sealing, its window over
	// since the 8th. Each seals 7 days after its end; prepared months get no time.
	want := map[string]time.Time{
		"202610": time.Date(2026, 11, 8, 0, 0, 0, 0, time.UTC),
		"202611": time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC),
	}
	for _, r := range got.Shards {
		w, listed := want[r.ShardMonth]
		switch {
		case listed && r.SealsAt != w.UnixMilli():
			t.Errorf("%s (%s) seals_at = %d, want %d", r.ShardMonth, r.Status, r.SealsAt, w.UnixMilli())
		case !listed && r.SealsAt != 0:
			t.Errorf("%s (%s) has seals_at %d", r.ShardMonth, r.Status, r.SealsAt)
		}
		delete(want, r.ShardMonth)
	}
	if len(want) > 0 {
		t.Errorf("months missing from the catalog: %v", want)
	}
}
