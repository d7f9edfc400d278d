package nativepush

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/pushtoken"
)

// holderTokens is the token table with a hook run inside each UsersWithTokens read, and an
// error to answer it with.
type holderTokens struct {
	*memory.PushTokens
	during func()
	err    error
	reads  []time.Time // the since of each read
}

func (s *holderTokens) UsersWithTokens(ctx context.Context, tenant string, since time.Time) ([]int64, error) {
	s.reads = append(s.reads, since)
	users, err := s.PushTokens.UsersWithTokens(ctx, tenant, since)
	if s.during != nil {
		s.during()
		s.during = nil
	}
	return users, errors.Join(err, s.err)
}

// TestHolders: a tenant's set is loaded on its first question (answered false), picks up other
// nodes' registrations on the next refresh and their removals on the next reload, keeps this
// node's changes at once (even one made while a read runs), and keeps what it had when a read
// fails.
func TestHolders(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	type step struct {
		name string
		act  func(h *Holders, s *holderTokens, c *memory.Clock)
		want map[int64]bool // Has after act
	}
	put := func(s *holderTokens, c *memory.Clock, user int64) {
		if err := s.PutToken(ctx, "acme", pushtoken.Token{User: user, DeviceID: "phone", Platform: pushtoken.APNs, Token: "t", UpdatedAt: c.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "loaded on first use, then refreshed and reloaded",
		steps: []step{
			{name: "first question starts the load", act: func(h *Holders, s *holderTokens, c *memory.Clock) { put(s, c, 1) }, want: map[int64]bool{1: false}},
			{name: "loaded", act: func(h *Holders, _ *holderTokens, _ *memory.Clock) { h.Refresh(ctx, false) }, want: map[int64]bool{1: true, 2: false}},
			{name: "another node's registration, by the refresh", act: func(h *Holders, s *holderTokens, c *memory.Clock) {
				c.Advance(30 * time.Second)
				put(s, c, 2)
				h.Refresh(ctx, true)
			}, want: map[int64]bool{1: true, 2: true}},
			{name: "another node's removal stays until the reload", act: func(h *Holders, s *holderTokens, c *memory.Clock) {
				if _, err := s.DeleteToken(ctx, "acme", 1, "phone"); err != nil {
					t.Fatal(err)
				}
				c.Advance(30 * time.Second)
				h.Refresh(ctx, true)
			}, want: map[int64]bool{1: true, 2: true}},
			{name: "reload", act: func(h *Holders, _ *holderTokens, c *memory.Clock) {
				c.Advance(10 * time.Minute)
				h.Refresh(ctx, true)
			}, want: map[int64]bool{1: false, 2: true}},
		},
	}, {
		name: "this node's changes at once",
		steps: []step{
			{name: "added before any load", act: func(h *Holders, s *holderTokens, c *memory.Clock) {
				put(s, c, 5)
				h.Added("acme", 5)
			}, want: map[int64]bool{5: true}},
			{name: "added during the first load, missed by its read", act: func(h *Holders, s *holderTokens, _ *memory.Clock) {
				s.during = func() { h.Added("acme", 6) }
				h.Refresh(ctx, false)
			}, want: map[int64]bool{5: true, 6: true}},
			{name: "removed", act: func(h *Holders, s *holderTokens, _ *memory.Clock) {
				if _, err := s.DeleteToken(ctx, "acme", 5, "phone"); err != nil {
					t.Fatal(err)
				}
				h.Removed("acme", 5)
			}, want: map[int64]bool{5: false, 6: true}},
		},
	}, {
		name: "a failed read keeps the set and is retried",
		steps: []step{
			{name: "first load fails", act: func(h *Holders, s *holderTokens, c *memory.Clock) {
				put(s, c, 7)
				h.Has("acme", 7)
				s.err = errors.New("down")
				h.Refresh(ctx, false)
			}, want: map[int64]bool{7: false}},
			{name: "the next round loads", act: func(h *Holders, s *holderTokens, _ *memory.Clock) {
				s.err = nil
				h.Refresh(ctx, true)
			}, want: map[int64]bool{7: true}},
			{name: "a failed refresh keeps it", act: func(h *Holders, s *holderTokens, _ *memory.Clock) {
				s.err = errors.New("down")
				h.Refresh(ctx, true)
			}, want: map[int64]bool{7: true}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := memory.NewClock(start)
			s := &holderTokens{PushTokens: memory.NewPushTokens()}
			h := NewHolders(HoldersConfig{}, s, clock, slog.New(slog.DiscardHandler))
			for _, st := range tt.steps {
				st.act(h, s, clock)
				for u, want := range st.want {
					if got := h.Has("acme", u); got != want {
						t.Fatalf("%s: Has(%d) = %v; want %v (reads since %v)", st.name, u, got, want, s.reads)
					}
				}
			}
		})
	}
}

// TestHoldersRefreshReadsSinceTheLastRead: a refresh reads the tokens updated since a minute
// before the last read, a reload (and the first load) every token.
func TestHoldersRefreshReadsSinceTheLastRead(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := memory.NewClock(start)
	s := &holderTokens{PushTokens: memory.NewPushTokens()}
	h := NewHolders(HoldersConfig{Refresh: time.Second, Reload: time.Hour}, s, clock, slog.New(slog.DiscardHandler))
	h.Has("acme", 1)
	h.Refresh(ctx, true)
	clock.Advance(30 * time.Second)
	h.Refresh(ctx, true)
	clock.Advance(time.Hour)
	h.Refresh(ctx, true)
	want := []time.Time{{}, start.Add(-time.Minute), {}}
	if len(s.reads) != len(want) {
		t.Fatalf("reads since %v; want %v", s.reads, want)
	}
	for i := range want {
		if !s.reads[i].Equal(want[i]) {
			t.Fatalf("reads since %v; want %v", s.reads, want)
		}
	}
}

// TestNilHolders: with the ack wait off nobody holds a token and nothing is read.
func TestNilHolders(t *testing.T) {
	var h *Holders
	h.Added("acme", 1)
	h.Removed("acme", 1)
	h.Run(context.Background())
	if h.Has("acme", 1) {
		t.Fatal("a nil Holders holds user 1")
	}
}

// TestHoldersRunLoadsOnFirstUse: Run loads a tenant as soon as it is first asked for, without
// waiting for the next refresh, and returns when its ctx ends.
func TestHoldersRunLoadsOnFirstUse(t *testing.T) {
	clock := memory.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	tokens := memory.NewPushTokens()
	if err := tokens.PutToken(t.Context(), "acme", pushtoken.Token{User: 1, DeviceID: "phone", Platform: pushtoken.FCM, Token: "t", UpdatedAt: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	h := NewHolders(HoldersConfig{Refresh: time.Hour}, tokens, clock, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	if h.Has("acme", 1) {
		t.Fatal("holder before the load")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !h.Has("acme", 1) {
		if time.Now().After(deadline) {
			t.Fatal("not loaded within 5s of the first question")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}
