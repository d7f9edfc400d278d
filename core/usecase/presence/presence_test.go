package presence_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	domain "github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/presence"
	"github.com/imdhq/imd/ports"
)

const tenant = "acme"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// take returns the pushes so far as (recipients, status) and forgets them.
func take(t *testing.T, r *memory.Pushes) []pushed {
	t.Helper()
	var out []pushed
	for _, a := range r.Take() {
		if a.Push.Kind != delivery.KindPresence {
			t.Fatalf("push of kind %q", a.Push.Kind)
		}
		var st presence.WireStatus
		if err := json.Unmarshal(a.Push.Data, &st); err != nil {
			t.Fatal(err)
		}
		out = append(out, pushed{to: a.Target.Recipients, st: st})
	}
	return out
}

type pushed struct {
	to []int64
	st presence.WireStatus
}

// liveness is a set of live node names.
type liveness map[string]bool

func (l liveness) Live(_, node string) bool { return l[node] }

// failingPresence is a registry that cannot be read (Redis down).
type failingPresence struct{ ports.Presence }

func (failingPresence) LookupWhole(context.Context, string, []int64) ([]domain.Entry, bool, error) {
	return nil, false, errors.New("redis: connection refused")
}

type world struct {
	svc     *presence.Service
	nodes   *memory.Nodes
	records *memory.Presence
	pusher  *memory.Pushes
	clock   *memory.Clock
	metrics *memory.Metrics
	deps    presence.Deps // to build the service again with another config
}

// newWorld: user 1 is friends with 2; 1, 3 and 4 share group 10 (3 members); 1 and 5..8
// share group 11, above the limit of 4.
func newWorld(t *testing.T, reg func(*memory.Nodes) ports.Presence) *world {
	return newWorldWith(t, reg, nil)
}

// newWorldWith is newWorld with the settings store wrapped by wrap (nil: as it is).
func newWorldWith(t *testing.T, reg func(*memory.Nodes) ports.Presence, wrap func(*memory.Presence) ports.UserSettings) *world {
	t.Helper()
	ctx := t.Context()
	clock := memory.NewClock(time.UnixMilli(1_796_169_600_000))
	dir := memory.NewDirectory()
	for u := int64(1); u <= 8; u++ {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dir.AddFriendship(ctx, tenant, 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 100, []int64{1, 3, 4}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 11, Owner: 1}, 101, []int64{1, 5, 6, 7, 8}, 0); err != nil {
		t.Fatal(err)
	}
	w := &world{nodes: memory.NewNodes(clock.Now), records: memory.NewPresence(), pusher: &memory.Pushes{}, clock: clock, metrics: memory.NewMetrics()}
	if whole, err := w.nodes.Mend(ctx, tenant, time.Minute, false, false); err != nil || !whole { // a first node's first pass
		t.Fatalf("a new registry: whole %v, %v", whole, err)
	}
	var p ports.Presence = w.nodes
	if reg != nil {
		p = reg(w.nodes)
	}
	var settings ports.UserSettings = w.records
	if wrap != nil {
		settings = wrap(w.records)
	}
	w.deps = presence.Deps{
		Presence: p, Nodes: liveness{"1-aa": true, "2-bb": true}, Records: w.records, Settings: settings,
		Friends: dir, Groups: dir, Members: dir, Pusher: w.pusher, Clock: clock, Metrics: w.metrics, Log: quiet,
	}
	w.svc = presence.New(presence.Config{GroupLimit: 4}, w.deps)
	return w
}

// lose is a registry loss some node found (its lease lapsed), not healed yet.
func (w *world) lose(t *testing.T) {
	t.Helper()
	if whole, err := w.nodes.Mend(t.Context(), tenant, time.Minute, true, true); err != nil || whole {
		t.Fatalf("a loss: whole %v, %v", whole, err)
	}
}

func (w *world) claim(t *testing.T, user int64, device uint64, node string) domain.Entry {
	t.Helper()
	e := domain.Entry{User: user, Device: device, Node: node, Token: device}
	if _, _, err := w.nodes.Claim(t.Context(), tenant, e); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestChangesReachFriendsAndSmallGroupsOnly(t *testing.T) {
	w := newWorld(t, nil)
	ctx := t.Context()
	if w.svc.Arriving(ctx, tenant, 1) {
		t.Fatal("user 1 online before any claim")
	}
	w.claim(t, 1, 1, "1-aa")
	w.svc.Arrived(ctx, tenant, 1)
	got := take(t, w.pusher)
	if len(got) != 1 || !slices.Equal(got[0].to, []int64{2, 3, 4}) || got[0].st != (presence.WireStatus{UserID: 1, State: "online"}) {
		t.Fatalf("online push %+v; want user 1 online to 2, 3, 4 (not the big group's 5..8)", got)
	}
	// A second device, on the other node: already online, nothing to tell.
	if !w.svc.Arriving(ctx, tenant, 1) {
		t.Fatal("user 1 not online with a device on a live node")
	}
	second := w.claim(t, 1, 2, "2-bb")

	// The first device leaves: the second keeps the user online.
	w.clock.Advance(time.Minute)
	if err := w.nodes.Release(ctx, tenant, domain.Entry{User: 1, Device: 1, Node: "1-aa", Token: 1}); err != nil {
		t.Fatal(err)
	}
	w.svc.Left(ctx, tenant, []int64{1})
	if got := take(t, w.pusher); len(got) != 0 {
		t.Fatalf("pushed %+v while a device stays", got)
	}
	// The last leaves: offline, last seen now, in MySQL.
	if err := w.nodes.Release(ctx, tenant, second); err != nil {
		t.Fatal(err)
	}
	w.svc.Left(ctx, tenant, []int64{1})
	want := presence.WireStatus{UserID: 1, State: "offline", LastSeen: w.clock.Now().UnixMilli()}
	if got := take(t, w.pusher); len(got) != 1 || got[0].st != want {
		t.Fatalf("offline push %+v; want %+v", got, want)
	}
	recs, _ := w.records.Records(ctx, tenant, []int64{1})
	if !recs[1].LastSeen.Equal(w.clock.Now()) {
		t.Fatalf("last_seen %v; want %v", recs[1].LastSeen, w.clock.Now())
	}
	if w.metrics.Count("presence_changes_total", "online") != 1 || w.metrics.Count("presence_changes_total", "offline") != 1 ||
		w.metrics.Count("presence_pushes_total") != 6 {
		t.Fatalf("metrics: online %v offline %v pushes %v", w.metrics.Count("presence_changes_total", "online"),
			w.metrics.Count("presence_changes_total", "offline"), w.metrics.Count("presence_pushes_total"))
	}
}

func TestQuery(t *testing.T) {
	seen := time.UnixMilli(1_796_169_000_000)
	tests := []struct {
		name     string
		registry func(*memory.Nodes) ports.Presence
		asker    int64
		ids      []int64
		hidden   []int64
		lost     bool // the registry lost and not healed yet
		want     []presence.WireStatus
		code     apperr.Code
	}{
		{name: "online, offline with last_seen, never seen; repeats answered once", asker: 9, ids: []int64{1, 2, 3, 1},
			want: []presence.WireStatus{{UserID: 1, State: "online"}, {UserID: 2, State: "offline", LastSeen: seen.UnixMilli()}, {UserID: 3, State: "offline"}}},
		{name: "a device on a dead node is not online", asker: 9, ids: []int64{4},
			want: []presence.WireStatus{{UserID: 4, State: "offline"}}},
		{name: "hidden to others, not to oneself", asker: 1, ids: []int64{1, 2}, hidden: []int64{1, 2},
			want: []presence.WireStatus{{UserID: 1, State: "online"}, {UserID: 2, State: "offline"}}},
		{name: "registry down: unknown, never online; last_seen still known", asker: 9, ids: []int64{1, 2},
			registry: func(n *memory.Nodes) ports.Presence { return failingPresence{n} },
			want:     []presence.WireStatus{{UserID: 1, State: "unknown"}, {UserID: 2, State: "unknown", LastSeen: seen.UnixMilli()}}},
		{name: "registry healing from a loss: unknown, never online or offline", asker: 9, ids: []int64{1, 2, 4}, lost: true,
			want: []presence.WireStatus{{UserID: 1, State: "unknown"}, {UserID: 2, State: "unknown", LastSeen: seen.UnixMilli()}, {UserID: 4, State: "unknown"}}},
		{name: "201 ids", asker: 9, ids: make([]int64, 201), code: apperr.InvalidArgument},
		{name: "a zero id", asker: 9, ids: []int64{1, 0}, code: apperr.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, tt.registry)
			ctx := t.Context()
			w.claim(t, 1, 1, "1-aa")
			w.claim(t, 4, 1, "9-dead")
			if err := w.records.Seen(ctx, tenant, 2, seen); err != nil {
				t.Fatal(err)
			}
			for _, u := range tt.hidden {
				hide := true
				if _, err := w.records.ChangeSettings(ctx, tenant, u, social.SettingsChange{HidePresence: &hide}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.lost {
				w.lose(t)
			}
			sts, err := w.svc.Query(ctx, tenant, tt.asker, tt.ids)
			if apperr.CodeOf(err) != tt.code {
				t.Fatalf("code %v (%v); want %v", apperr.CodeOf(err), err, tt.code)
			}
			var got []presence.WireStatus
			for _, st := range sts {
				got = append(got, presence.Wire(st))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %+v; want %+v", got, tt.want)
			}
		})
	}
}

func TestHidingTellsTheAudienceAndSilencesChanges(t *testing.T) {
	w := newWorld(t, nil)
	ctx := t.Context()
	w.claim(t, 1, 1, "1-aa")
	yes, no := true, false
	s, err := w.svc.ChangeSettings(ctx, tenant, 1, social.SettingsChange{HidePresence: &yes})
	if err != nil || !s.HidePresence {
		t.Fatalf("hide: %+v, %v", s, err)
	}
	if got := take(t, w.pusher); len(got) != 1 || got[0].st != (presence.WireStatus{UserID: 1, State: "offline"}) {
		t.Fatalf("hiding pushed %+v; want offline without last_seen", got)
	}
	if _, err := w.svc.ChangeSettings(ctx, tenant, 1, social.SettingsChange{}); err != nil {
		t.Fatal(err)
	}
	w.svc.Left(ctx, tenant, []int64{1}) // still online: nothing; and hidden anyway
	w.svc.Arrived(ctx, tenant, 1)
	if got := take(t, w.pusher); len(got) != 0 {
		t.Fatalf("a hidden user's change was pushed: %+v", got)
	}
	if _, err := w.svc.ChangeSettings(ctx, tenant, 1, social.SettingsChange{HidePresence: &no}); err != nil {
		t.Fatal(err)
	}
	if got := take(t, w.pusher); len(got) != 1 || got[0].st.State != "online" {
		t.Fatalf("showing again pushed %+v; want online", got)
	}
}

func TestUnreadableRegistryAnnouncesNothing(t *testing.T) {
	w := newWorld(t, func(n *memory.Nodes) ports.Presence { return failingPresence{n} })
	ctx := t.Context()
	if !w.svc.Arriving(ctx, tenant, 1) {
		t.Fatal("an unreadable registry must answer online (no announcement) before a claim")
	}
	w.svc.Left(ctx, tenant, []int64{1})
	if got := take(t, w.pusher); len(got) != 0 {
		t.Fatalf("pushed %+v on an unreadable registry", got)
	}
}

// racing is a settings store where another request changes hide_presence right after each
// read, before the change that read is for is written.
type racing struct{ *memory.Presence }

func (r racing) Settings(ctx context.Context, tenant string, user int64) (social.Settings, error) {
	s, err := r.Presence.Settings(ctx, tenant, user)
	hide := true
	if _, err := r.Presence.ChangeSettings(ctx, tenant, user, social.SettingsChange{HidePresence: &hide}); err != nil {
		return social.Settings{}, err
	}
	return s, err
}

// TestConcurrentChangesOfOtherSettingsStand: a change writes only the settings it names, so
// one landing between its read and its write is kept (issue 31).
func TestConcurrentChangesOfOtherSettingsStand(t *testing.T) {
	w := newWorldWith(t, nil, func(p *memory.Presence) ports.UserSettings { return racing{p} })
	ctx := t.Context()
	hide := true
	if _, err := w.svc.ChangeSettings(ctx, tenant, 1, social.SettingsChange{HideReceipts: &hide}); err != nil {
		t.Fatal(err)
	}
	if s, err := w.records.Settings(ctx, tenant, 1); err != nil || s != (social.Settings{HidePresence: true, HideReceipts: true}) {
		t.Fatalf("stored %+v, %v; want both hidden", s, err)
	}
}

// waitPushes returns the pushes once there are n, failing after a few seconds.
func waitPushes(t *testing.T, r *memory.Pushes, n int) []pushed {
	t.Helper()
	var got []pushed
	for deadline := time.Now().Add(5 * time.Second); len(got) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pushes %+v; want %d", got, n)
		}
		got = append(got, take(t, r)...)
	}
	return got
}

// TestRegistryLossIsUnknownUntilTheHealThenPushed (DESIGN §13 "Unknown until healed"): while
// the registry heals, queries answer unknown, an arrival and a departure announce nothing
// (the departure is still seen in MySQL), and once it is whole the node pushes the state of
// its connected users and of those who left meanwhile, paced and bounded.
func TestRegistryLossIsUnknownUntilTheHealThenPushed(t *testing.T) {
	w := newWorld(t, nil)
	w.svc = presence.New(presence.Config{GroupLimit: 4, HealRate: 20, HealQueue: 3}, w.deps)
	ctx := t.Context()
	w.claim(t, 1, 1, "1-aa")
	w.claim(t, 3, 1, "2-bb")

	w.nodes.Lose() // FLUSHALL: the entries and the mark are gone
	w.lose(t)      // a node's renewal found its lease lapsed
	sts, err := w.svc.Query(ctx, tenant, 9, []int64{1, 3})
	if err != nil || sts[0].State != domain.Unknown || sts[1].State != domain.Unknown {
		t.Fatalf("while healing: %+v, %v; want both unknown", sts, err)
	}
	if n := w.metrics.Count("presence_unknown_total"); n != 2 {
		t.Fatalf("presence_unknown_total %v; want 2", n)
	}
	if !w.svc.Arriving(ctx, tenant, 2) {
		t.Fatal("an arrival while healing must not be announced")
	}
	w.claim(t, 2, 1, "2-bb") // user 2 arrived while the registry healed: pushed once whole
	w.clock.Advance(time.Minute)
	w.svc.Left(ctx, tenant, []int64{3}) // user 3 left while the registry healed
	if got := take(t, w.pusher); len(got) != 0 {
		t.Fatalf("pushed %+v while healing", got)
	}
	left := w.clock.Now()
	if recs, _ := w.records.Records(ctx, tenant, []int64{3}); !recs[3].LastSeen.Equal(left) {
		t.Fatalf("last_seen of the user who left while healing: %v; want %v", recs[3].LastSeen, left)
	}

	// Node 1 claimed user 1 again; a lease after the loss the registry is whole.
	w.claim(t, 1, 1, "1-aa")
	w.clock.Advance(2 * time.Minute)
	if whole, err := w.nodes.Mend(ctx, tenant, time.Minute, true, false); err != nil || !whole {
		t.Fatalf("after a lease: whole %v, %v", whole, err)
	}
	start := time.Now()
	w.svc.Healed(ctx, tenant, []int64{1, 5}) // 5 finds the queue full: users 2 and 3 wait in it already
	run, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.svc.RunHeals(run) }()
	defer func() { stop(); <-done }()
	got := waitPushes(t, w.pusher, 3)
	if elapsed := time.Since(start); elapsed < 90*time.Millisecond {
		t.Errorf("three heal pushes in %v at 20 a second", elapsed)
	}
	want := []pushed{
		{to: []int64{1}, st: presence.WireStatus{UserID: 2, State: "online"}},
		{to: []int64{1, 4}, st: presence.WireStatus{UserID: 3, State: "offline", LastSeen: left.UnixMilli()}},
		{to: []int64{2, 3, 4}, st: presence.WireStatus{UserID: 1, State: "online"}},
	}
	for i := range want {
		if i >= len(got) || !slices.Equal(got[i].to, want[i].to) || got[i].st != want[i].st {
			t.Fatalf("heal pushes %+v; want %+v", got, want)
		}
	}
	if p, d := w.metrics.Count("presence_heal_pushes_total", "pushed"), w.metrics.Count("presence_heal_pushes_total", "dropped"); p != 3 || d != 1 {
		t.Fatalf("heal pushes: pushed %v dropped %v; want 3 and 1", p, d)
	}
	sts, err = w.svc.Query(ctx, tenant, 9, []int64{1, 3})
	if err != nil || sts[0].State != domain.Online || sts[1].State != domain.Offline {
		t.Fatalf("after the heal: %+v, %v; want online, offline", sts, err)
	}
}
