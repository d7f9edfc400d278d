package send_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

// lifecycleFixture is the send fixture with the ports of the shard lifecycle wired in.
type lifecycleFixture struct {
	*fixture
	svc          *send.Service
	routes       *brokenRoutes
	repairs      *recordedRepairs
	compensation *memory.CompensationList
}

// brokenRoutes fails every route update while broken is set, like a damaged route key.
type brokenRoutes struct {
	*memory.RouteCache
	broken bool
}

func (r *brokenRoutes) Apply(ctx context.Context, tenant string, updates []ports.RouteUpdate) error {
	if r.broken {
		return errors.New("WRONGTYPE")
	}
	return r.RouteCache.Apply(ctx, tenant, updates)
}

type recordedRepairs struct {
	mu     sync.Mutex
	topics []string
}

func (r *recordedRepairs) Enqueue(_ context.Context, _, topic string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.topics = append(r.topics, topic)
	return nil
}

func newLifecycleFixture(t *testing.T) *lifecycleFixture {
	t.Helper()
	f := &lifecycleFixture{
		fixture: newFixture(t), routes: &brokenRoutes{RouteCache: memory.NewRouteCache()},
		repairs: &recordedRepairs{}, compensation: memory.NewCompensationList(),
	}
	ids := memory.NewIDs(f.clock)
	f.svc = send.New(send.Config{MsgIDWindow: 5 * time.Minute}, send.Deps{
		Seq: f.seqs, Store: f.store, FollowUp: f.followUp(f.routes, nil), IDs: ids, Clock: f.clock,
		Metrics: f.metrics, Resolver: conversation.NewResolver(f.dir, ids, membership.New(f.dir, f.clock, time.Second)),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Months: f.manager,
		Repairs: f.repairs, Compensation: f.compensation,
	})
	return f
}

func (f *lifecycleFixture) sendText(clientID string) (send.Result, error) {
	return f.svc.Send(context.Background(), send.Request{
		Tenant: tenant, From: 1, FromDevice: 1, Address: conversation.Address{Topic: f.group}, Draft: draft(clientID),
	})
}

func draft(clientID string) message.Draft {
	content, _ := json.Marshal(map[string]string{"text": "late"})
	return message.Draft{ClientMsgID: clientID, Type: "text", Content: content}
}

// TestLateWriteIntoAClosedMonth: a message whose month was fixed before the boundary is
// written after its month stopped taking writes (seed 000 §5.3).
func TestLateWriteIntoAClosedMonth(t *testing.T) {
	sep, oct := month.Month(202609), month.Month(202610)
	tests := []struct {
		name string
		// after is the states September walks through from sealing before the write.
		after            []shard.State
		wantCompensation bool
	}{
		{name: "sealing month still takes it"},
		{name: "sealed month goes to compensation", after: []shard.State{shard.Sealed}, wantCompensation: true},
		{name: "archived month goes to compensation", after: []shard.State{shard.Sealed, shard.Archived}, wantCompensation: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLifecycleFixture(t)
			ctx := context.Background()
			d := draft("late")
			// The seq script fixes September before the boundary; the write comes after it.
			if err := f.seqs.Reseed(ctx, tenant, f.group, 0); err != nil {
				t.Fatal(err)
			}
			fixed, err := f.seqs.Allocate(ctx, tenant, seq.Request{Topic: f.group, From: 1, ClientMsgID: "late", MsgID: 77, Hash: d.Hash()})
			if err != nil || fixed.Month != sep {
				t.Fatalf("allocation %+v %v", fixed, err)
			}
			f.clock.Set(time.Date(2026, 10, 1, 0, 0, 1, 0, time.UTC))
			if err := f.manager.Ensure(ctx, tenant); err != nil {
				t.Fatal(err)
			}
			from := shard.Sealing
			for _, to := range tc.after {
				if err := f.shards.SetState(ctx, tenant, sep, from, to); err != nil {
					t.Fatal(err)
				}
				from = to
			}
			for attempt := range 2 { // the client retries with the same client_msg_id
				res, err := f.sendText("late")
				if !tc.wantCompensation {
					if err != nil || res.Message.Month != sep || res.Message.Seq != fixed.Seq {
						t.Fatalf("late write into a sealing month: %+v %v", res.Message, err)
					}
					return
				}
				if apperr.CodeOf(err) != apperr.Busy {
					t.Fatalf("attempt %d: err = %v, want 50301", attempt, err)
				}
			}
			entries, err := f.compensation.List(ctx, tenant, 10)
			if err != nil || len(entries) != 1 {
				t.Fatalf("compensation list: %+v %v; want one entry for two attempts", entries, err)
			}
			got := entries[0].Message
			if got.MsgID != 77 || got.Seq != fixed.Seq || got.Month != sep || got.Topic != f.group ||
				string(got.Content) != string(d.Content) || entries[0].Hash != d.Hash() {
				t.Fatalf("compensation entry %+v does not hold the whole message", entries[0])
			}
			if n := f.metrics.Count("group_message_dead_letter_total"); n != 1 {
				t.Fatalf("dead letters counted %v times, want once", n)
			}
			if n := f.metrics.Count("group_message_shard_missing_total"); n != 0 {
				t.Fatalf("a sealed month is not a missing table: shard_missing = %v", n)
			}
			if _, err := f.store.Get(ctx, tenant, sep, f.group, fixed.Seq); !errors.Is(err, message.ErrNotFound) {
				t.Fatalf("the refused write must not be stored: %v", err)
			}
			// Nothing else is held up: a new message goes to October.
			next, err := f.sendText("next")
			if err != nil || next.Message.Month != oct {
				t.Fatalf("next message: %+v %v", next.Message, err)
			}
		})
	}
}

func TestFailedRouteUpdateIsQueuedForRepair(t *testing.T) {
	f := newLifecycleFixture(t)
	ctx := context.Background()
	if _, err := f.sendText("a"); err != nil {
		t.Fatal(err)
	}
	// Give the topic a route, so updates apply to it; then break Redis' copy.
	if err := f.routes.Replace(ctx, tenant, f.group, mustSegments(t, f.fixture)); err != nil {
		t.Fatal(err)
	}
	f.routes.broken = true
	res, err := f.sendText("b")
	if err != nil || res.Message.Seq != 2 {
		t.Fatalf("a failed route update must not fail the send: %+v %v", res.Message, err)
	}
	if len(f.repairs.topics) != 1 || f.repairs.topics[0] != f.group {
		t.Fatalf("repairs queued: %v, want [%s]", f.repairs.topics, f.group)
	}
	f.routes.broken = false
	if _, err := f.sendText("c"); err != nil || len(f.repairs.topics) != 1 {
		t.Fatalf("a good route update queues nothing: %v %v", f.repairs.topics, err)
	}
}

func mustSegments(t *testing.T, f *fixture) route.Route {
	t.Helper()
	rt, err := f.store.Segments(context.Background(), tenant, f.group)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
