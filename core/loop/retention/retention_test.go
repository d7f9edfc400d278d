package retention_test

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
	"github.com/imdhq/imd/core/loop/retention"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/archivereader"
	"github.com/imdhq/imd/core/usecase/archiver"
)

const tenant = "t1"

// active is the tenant's month; the calendar (Redis TIME) is a year later, so no month here is
// in the shard manager's window.
var active = month.Month(203107)

type fixture struct {
	shards *memory.ShardStore
	svc    func(p retention.Policy) *retention.Service
}

// newFixture stores one message in each of 203101-203106 and seals 203101-203105.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(active.Add(12).Start())
	f := &fixture{shards: memory.NewShardStore()}
	store := memory.NewMessageStore(f.shards)
	months := memory.NewMonthState(clock.Now)
	for m := active.Add(-6); m <= active; m = m.Next() {
		if err := f.shards.EnsureTable(ctx, tenant, m); err != nil {
			t.Fatal(err)
		}
		if err := months.MarkReady(ctx, tenant, 0, m); err != nil {
			t.Fatal(err)
		}
		if _, err := months.Advance(ctx, tenant, 0, m); err != nil {
			t.Fatal(err)
		}
		if err := f.shards.SetState(ctx, tenant, m, shard.Prepared, shard.Writable); err != nil {
			t.Fatal(err)
		}
		if m == active {
			break
		}
		seq := int64(m - active.Add(-7))
		msg := message.Message{Topic: "grp_1", Seq: seq, MsgID: seq, From: 1, ClientMsgID: fmt.Sprint(seq), Type: "text",
			Content: json.RawMessage(`{"text":"x"}`), Status: message.StatusNormal, Version: 1, CreatedAt: m.Start(), Month: m}
		if _, err := store.Append(ctx, tenant, msg, "h"); err != nil {
			t.Fatal(err)
		}
		to := shard.Sealed
		if m == active.Add(-1) {
			to = shard.Sealing
		}
		for _, step := range [][2]shard.State{{shard.Writable, shard.Sealing}, {shard.Sealing, shard.Sealed}} {
			if step[0] == to {
				break
			}
			if err := f.shards.SetState(ctx, tenant, m, step[0], step[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	metrics, blobs, rows, dellog := memory.NewMetrics(), memory.NewBlobStore(), memory.NewMonthRows(f.shards), memory.NewDeleteLog(f.shards)
	a := archiver.New(archiver.Config{}, archiver.Deps{
		Catalog: f.shards, Manager: shardmanager.New(shardmanager.Config{}, shardmanager.Deps{Store: f.shards, Months: months, Metrics: metrics, Log: log}),
		Rows: rows, Mirror: memory.NewRouteMirror(f.shards), Store: store, Blobs: blobs,
		Reader: archivereader.NewReader(archivereader.Config{}, blobs, dellog, metrics), States: archivereader.NewStates(archivereader.Config{StateTTL: time.Second}, f.shards, clock),
		Deliveries: memory.NewDeliverQueue(clock.Now), Repairs: noBacklog{}, References: memory.NewReferences(), Purged: rows,
		Routes: memory.NewRouteCache(), Months: months, Locks: memory.NewLocks(clock.Now), Clock: clock, Metrics: metrics, Log: log,
	})
	f.svc = func(p retention.Policy) *retention.Service {
		s, err := retention.New(retention.Config{Tenants: map[string]retention.Policy{tenant: p}}, retention.Deps{Archiver: a, Catalog: f.shards, Rows: rows, Months: months, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return f
}

type noBacklog struct{}

func (noBacklog) Pending(context.Context, string, month.Month) (bool, error) { return false, nil }

func steps(p retention.Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, fmt.Sprintf("%s %s %s", s.Month, s.Action, s.Outcome))
	}
	return out
}

// TestPlanFollowsThePolicy: ages count from the active month; only sealed or archived months
// move, and the sealing one never does.
func TestPlanFollowsThePolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy retention.Policy
		want   []string
	}{
		{"off", retention.Policy{}, nil},
		{"keep 3 online", retention.Policy{KeepOnlineMonths: 3}, []string{"203101 archive ", "203102 archive ", "203103 archive ", "203104 archive "}},
		{"keep 5, purge after 6", retention.Policy{KeepOnlineMonths: 5, PurgeAfterMonths: 6}, []string{"203101 purge ", "203102 archive "}},
		{"purge only", retention.Policy{PurgeAfterMonths: 5}, []string{"203101 purge ", "203102 purge "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			plan, err := f.svc(tc.policy).Plan(context.Background(), tenant)
			if err != nil {
				t.Fatal(err)
			}
			if got := steps(plan); !slices.Equal(got, tc.want) {
				t.Fatalf("plan %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRunArchivesDropsAndPurges(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	svc := f.svc(retention.Policy{KeepOnlineMonths: 4, PurgeAfterMonths: 6})
	plan, err := svc.Run(ctx, tenant, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := steps(plan), []string{"203101 purge done", "203102 archive done", "203103 archive done"}; !slices.Equal(got, want) {
		t.Fatalf("run %v, want %v", got, want)
	}
	infos, err := f.shards.Catalog(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, in := range infos {
		states = append(states, fmt.Sprintf("%s %s", in.Month, in.State))
	}
	want := []string{"203102 archived", "203103 archived", "203104 sealed", "203105 sealed", "203106 sealing", "203107 writable"}
	if !slices.Equal(states, want) {
		t.Fatalf("catalog %v, want %v", states, want)
	}
	again, err := svc.Plan(ctx, tenant)
	if err != nil || len(again.Steps) != 0 {
		t.Fatalf("a second plan: %v %v", steps(again), err)
	}
}

func TestPolicyValidation(t *testing.T) {
	for _, p := range []retention.Policy{{KeepOnlineMonths: 1}, {KeepOnlineMonths: 3, PurgeAfterMonths: 3}, {PurgeAfterMonths: 1}, {KeepOnlineMonths: -1}} {
		if p.Validate() == nil {
			t.Errorf("%+v was accepted", p)
		}
	}
	for _, p := range []retention.Policy{{}, {KeepOnlineMonths: 2}, {KeepOnlineMonths: 2, PurgeAfterMonths: 3}, {PurgeAfterMonths: 2}} {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}
