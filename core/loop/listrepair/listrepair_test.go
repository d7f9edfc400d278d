package listrepair_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/loop/listrepair"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/history"
)

const (
	tenant  = "t1"
	topic   = "grp_7"
	conv    = 700
	doneTTL = 10 * time.Minute
	window  = time.Hour
	settle  = 30 * time.Second
)

// The group: user 1 sends everything, 2 and 3 receive.
var (
	oct     = month.Month(202610)
	members = []int64{1, 2, 3}
)

type fixture struct {
	clock   *memory.Clock
	store   *memory.MessageStore
	dialogs *memory.DialogStore
	metrics *memory.Metrics
	lineage *memory.RedisLineage
	svc     *listrepair.Service
	msgs    map[int64]message.Message // by seq
	acted   map[int64]bool            // the seqs whose deliver jobs acted
}

func newFixture(t *testing.T, cfg listrepair.Config) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC))
	shards := memory.NewShardStore()
	f := &fixture{
		clock: clock, store: memory.NewMessageStore(shards), dialogs: memory.NewDialogStore(clock.Now),
		metrics: memory.NewMetrics(), lineage: memory.NewRedisLineage(), msgs: map[int64]message.Message{}, acted: map[int64]bool{},
	}
	months := memory.NewMonthState(clock.Now)
	if err := shards.EnsureTable(ctx, tenant, oct); err != nil {
		t.Fatal(err)
	}
	if err := months.MarkReady(ctx, tenant, 0, oct); err != nil {
		t.Fatal(err)
	}
	if _, err := months.Advance(ctx, tenant, 0, oct); err != nil {
		t.Fatal(err)
	}
	dir := memory.NewDirectory()
	for _, u := range members {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 7, Owner: 1}, conv, members[1:], 0); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hist := history.New(history.Deps{Store: f.store, Routes: memory.NewRouteCache(), Months: months, Metrics: f.metrics, Log: log})
	cfg.Settle, cfg.Window = settle, window
	f.svc = listrepair.New(cfg, listrepair.Deps{
		Gaps: f.dialogs, Dialogs: f.dialogs, History: hist, Mirror: memory.NewRouteMirror(shards), Months: months,
		Lineage: f.lineage, Members: membership.New(dir, clock, time.Second), Metrics: f.metrics, Clock: clock, Log: log,
	})
	return f
}

// commit stores the messages of seqs from user 1, a second apart, the last one a minute ago.
func (f *fixture) commit(t *testing.T, seqs ...int64) {
	t.Helper()
	for i, s := range seqs {
		m := message.Message{
			Topic: topic, ConversationID: conv, Seq: s, MsgID: 1000 + s, From: 1, ClientMsgID: fmt.Sprint("c", s),
			Type: "text", Content: []byte(`{"text":"hi"}`), Status: message.StatusNormal, Version: 1, Month: oct,
			CreatedAt: f.clock.Now().Add(-time.Minute - time.Duration(len(seqs)-i)*time.Second),
		}
		if _, err := f.store.Append(context.Background(), tenant, m, "h"); err != nil {
			t.Fatal(err)
		}
		f.msgs[s] = m
	}
}

// deliver applies the messages of seqs to the lists as their deliver jobs do, with markers of
// ttl.
func (f *fixture) deliver(t *testing.T, ttl time.Duration, seqs ...int64) {
	t.Helper()
	for _, s := range seqs {
		m := f.msgs[s]
		f.acted[s] = true
		u := dialog.UpdateOf(m, delivery.Job{Kind: delivery.KindMessage, MsgID: m.MsgID}.DoneKey(), ttl, dialog.BatchesOf(members))
		if _, err := f.dialogs.Apply(context.Background(), tenant, u); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) note(t *testing.T, at time.Time, from, to int64) {
	t.Helper()
	if err := f.dialogs.Note(context.Background(), tenant, at, dialog.Gap{Topic: topic, ConversationID: conv, From: from, To: to}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) pass(t *testing.T) listrepair.Report {
	t.Helper()
	rep, err := f.svc.Pass(context.Background(), tenant)
	if err != nil {
		t.Fatalf("Pass: %v", err)
	}
	return rep
}

// expectLists checks every recipient's unread count and the preview's seq, and that the
// sender counts nothing.
func (f *fixture) expectLists(t *testing.T, unread, preview int64) {
	t.Helper()
	ctx := context.Background()
	for _, u := range members {
		entries, err := f.dialogs.Changed(ctx, tenant, u, 0, 10)
		if err != nil || len(entries) != 1 {
			t.Fatalf("user %d: lists %+v, %v; want the conversation", u, entries, err)
		}
		want := unread
		if u == 1 {
			want = 0
		}
		if e := entries[0]; e.Unread != want || e.Preview.Seq != preview || e.Score != dialog.ScoreOf(f.msgs[preview].CreatedAt) {
			t.Fatalf("user %d: %d unread, preview seq %d, score %d; want %d, %d, %d", u, e.Unread, e.Preview.Seq, e.Score,
				want, preview, dialog.ScoreOf(f.msgs[preview].CreatedAt))
		}
	}
}

func TestRepairConvergesListsToWhatMySQLHolds(t *testing.T) {
	tests := []struct {
		name string
		// setup stores messages, delivers some and notes gaps, as consumers do; the clock
		// then stands at settle past every note.
		setup  func(t *testing.T, f *fixture)
		unread int64 // of each recipient after the pass
		want   listrepair.Report
	}{
		{
			name: "lost jobs inside a topic: the consumer noted the gap",
			setup: func(t *testing.T, f *fixture) {
				f.commit(t, 1, 2, 3, 4, 5)
				f.deliver(t, doneTTL, 1, 2, 5)
				f.note(t, f.clock.Now(), 3, 4)
			},
			unread: 5, want: listrepair.Report{Gaps: 1, Sampled: 1, Repaired: 2},
		},
		{
			name: "lost jobs at the end of a topic: no gap, the tail is past the preview",
			setup: func(t *testing.T, f *fixture) {
				f.commit(t, 1, 2, 3, 4, 5)
				f.deliver(t, doneTTL, 1, 2, 3)
			},
			unread: 5, want: listrepair.Report{Sampled: 1, Repaired: 2},
		},
		{
			name: "a gap whose seq was a failed send holds nothing to apply",
			setup: func(t *testing.T, f *fixture) {
				f.commit(t, 1, 2, 4)
				f.deliver(t, doneTTL, 1, 2, 4)
				f.note(t, f.clock.Now(), 3, 3)
			},
			unread: 3, want: listrepair.Report{Gaps: 1, Sampled: 1},
		},
		{
			name: "the late job acted before the repair, long after its done TTL: counted once",
			setup: func(t *testing.T, f *fixture) {
				f.commit(t, 1, 2, 3)
				f.deliver(t, doneTTL, 1, 3)
				f.note(t, f.clock.Now(), 2, 2)
				f.deliver(t, window, 2) // behind its topic: markers of the repair window
				f.clock.Advance(2 * doneTTL)
			},
			unread: 3, want: listrepair.Report{Gaps: 1, Sampled: 1},
		},
		{
			name: "a gap older than the window is left",
			setup: func(t *testing.T, f *fixture) {
				f.commit(t, 1, 2, 3)
				f.deliver(t, doneTTL, 1, 3)
				f.note(t, f.clock.Now().Add(-window-time.Second), 2, 2)
			},
			unread: 2, want: listrepair.Report{Gaps: 1, Expired: 1, Sampled: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, listrepair.Config{})
			tc.setup(t, f)
			f.clock.Advance(settle)
			if rep := f.pass(t); rep != tc.want {
				t.Fatalf("Pass = %+v; want %+v", rep, tc.want)
			}
			f.expectLists(t, tc.unread, maxSeq(f))
			// What the pass did stays done: a second pass, and the lost jobs coming after
			// all (behind their topic), count nothing again; only a job whose gap the
			// repair left acts.
			if rep := f.pass(t); rep.Repaired != 0 || rep.Gaps != 0 {
				t.Fatalf("second Pass = %+v; want nothing repaired", rep)
			}
			var lost []int64
			for s := range f.msgs {
				if !f.acted[s] {
					lost = append(lost, s)
				}
			}
			f.deliver(t, window, lost...)
			f.expectLists(t, int64(len(f.msgs)), maxSeq(f))
			if got := f.metrics.Count("deliver_list_repair_total", "repaired"); got != float64(tc.want.Repaired) {
				t.Fatalf("deliver_list_repair_total{repaired} = %v; want %d", got, tc.want.Repaired)
			}
		})
	}
}

func maxSeq(f *fixture) int64 {
	var n int64
	for s := range f.msgs {
		n = max(n, s)
	}
	return n
}

// A gap longer than a pass's budget is repaired over several passes, newest first, each pass
// re-applying at most Messages messages.
func TestLongGapGoesOnInTheNextPass(t *testing.T) {
	f := newFixture(t, listrepair.Config{Messages: 2})
	f.commit(t, 1, 2, 3, 4, 5, 6)
	f.deliver(t, doneTTL, 1, 6)
	f.note(t, f.clock.Now(), 2, 5)
	f.clock.Advance(settle)
	for i, want := range []int{2, 2, 0} {
		if rep := f.pass(t); rep.Repaired != want {
			t.Fatalf("pass %d repaired %d; want %d", i+1, rep.Repaired, want)
		}
	}
	f.expectLists(t, 6, 6)
}

const lookback = 5 * time.Minute

// After a Redis failover the lists heal by themselves (DESIGN §5 "After a Redis failover"):
// the list updates the promoted replica lacks are re-applied from MySQL, each message under
// its own markers, so the counts come out exact, never high.
func TestListsHealAfterARedisFailover(t *testing.T) {
	tests := []struct {
		name string
		// run stores messages 1-6, delivers some, and fails Redis over (or not) between
		// Watch calls; the clock then moves settle on and a pass runs.
		run    func(t *testing.T, f *fixture)
		unread int64 // of each recipient after the pass
		want   listrepair.Report
		change float64 // redis_lineage_change_total
		pages  int     // Config.Messages; 0: the default
	}{
		{
			name: "the promoted replica lacks updates: they are re-applied",
			run: func(t *testing.T, f *fixture) {
				f.watch(t)
				f.deliver(t, doneTTL, 1, 2)
				restore := f.dialogs.Snapshot() // what the replica has
				f.deliver(t, doneTTL, 3, 4)
				restore()
				f.lineage.Replace()
				f.deliver(t, doneTTL, 5, 6) // after the failover, on the new master
				f.clock.Advance(time.Second)
				f.watch(t)
			},
			unread: 6, want: listrepair.Report{Healed: 1, Sampled: 1, Repaired: 2}, change: 1,
		},
		{
			name: "a window longer than a history page is read a page at a time",
			run: func(t *testing.T, f *fixture) {
				f.watch(t)
				f.deliver(t, doneTTL, 1)
				restore := f.dialogs.Snapshot()
				f.deliver(t, doneTTL, 2, 3, 4, 5)
				restore()
				f.lineage.Replace()
				f.deliver(t, doneTTL, 6)
				f.watch(t)
			},
			unread: 6, want: listrepair.Report{Healed: 1, Sampled: 1, Repaired: 4}, change: 1, pages: 2,
		},
		{
			name: "no failover: nothing is re-applied",
			run: func(t *testing.T, f *fixture) {
				f.watch(t)
				f.deliver(t, doneTTL, 1, 2, 3, 4, 5, 6)
				f.clock.Advance(time.Second)
				f.watch(t)
			},
			unread: 6, want: listrepair.Report{Sampled: 1},
		},
		{
			name: "a failover that lost nothing counts nothing again",
			run: func(t *testing.T, f *fixture) {
				f.watch(t)
				f.deliver(t, doneTTL, 1, 2, 3, 4, 5, 6)
				f.lineage.Replace()
				f.watch(t)
			},
			unread: 6, want: listrepair.Report{Healed: 1, Sampled: 1}, change: 1,
		},
		{
			name: "the lineage first seen is no failover",
			run: func(t *testing.T, f *fixture) {
				f.deliver(t, doneTTL, 1, 2, 3, 4, 5, 6)
				f.lineage.Replace()
				f.watch(t)
			},
			unread: 6, want: listrepair.Report{Sampled: 1},
		},
		{
			name: "a heal never reaches past the markers' life, whose markers may be gone",
			run: func(t *testing.T, f *fixture) {
				f.watch(t)
				f.deliver(t, doneTTL, 1, 2, 3, 4, 5, 6)
				f.clock.Advance(2 * doneTTL) // their markers expire
				f.lineage.Replace()
				f.watch(t)
			},
			unread: 6, want: listrepair.Report{Healed: 1, Sampled: 1}, change: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, listrepair.Config{Lookback: lookback, Markers: doneTTL, Messages: tc.pages})
			f.commit(t, 1, 2, 3, 4, 5, 6)
			tc.run(t, f)
			f.clock.Advance(settle)
			if rep := f.pass(t); rep != tc.want {
				t.Fatalf("Pass = %+v; want %+v", rep, tc.want)
			}
			f.expectLists(t, tc.unread, 6)
			if got := f.metrics.Count("redis_lineage_change_total"); got != tc.change {
				t.Fatalf("redis_lineage_change_total = %v; want %v", got, tc.change)
			}
			// A heal is done once: the next pass, and the next failover check, re-apply nothing.
			f.watch(t)
			if rep := f.pass(t); rep.Healed != 0 || rep.Repaired != 0 {
				t.Fatalf("second Pass = %+v; want nothing healed", rep)
			}
			f.expectLists(t, tc.unread, 6)
		})
	}
}

func (f *fixture) watch(t *testing.T) {
	t.Helper()
	if err := f.svc.Watch(context.Background()); err != nil {
		t.Fatalf("Watch: %v", err)
	}
}
