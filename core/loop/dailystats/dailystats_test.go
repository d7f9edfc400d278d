package dailystats_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/stats"
	"github.com/imdhq/imd/core/loop/dailystats"
)

// rows records the upserts and can fail them.
type rows struct {
	mu    sync.Mutex
	calls int
	fail  bool
	days  map[string]stats.Day // tenant + " " + date → sum
}

func newRows() *rows { return &rows{days: make(map[string]stats.Day)} }

func (r *rows) AddDay(_ context.Context, tenant string, d stats.Day) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.fail {
		return errors.New("mysql is down")
	}
	k := tenant + " " + d.Day.Format(time.DateOnly)
	sum := r.days[k]
	sum.Day = d.Day
	sum.Messages += d.Messages
	sum.GroupMessages += d.GroupMessages
	sum.P2PMessages += d.P2PMessages
	r.days[k] = sum
	return nil
}

func (r *rows) snapshot() (int, map[string]stats.Day) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]stats.Day, len(r.days))
	for k, v := range r.days {
		out[k] = v
	}
	return r.calls, out
}

var (
	day1 = time.Date(2030, 3, 1, 23, 59, 59, 0, time.UTC)
	day2 = time.Date(2030, 3, 2, 0, 0, 0, 0, time.UTC)
)

func msg(topic string, at time.Time) message.Message {
	return message.Message{Topic: topic, CreatedAt: at}
}

func TestCounterSumsPerTenantAndDay(t *testing.T) {
	tests := []struct {
		name      string
		heard     map[string][]message.Message // tenant → messages
		wantCalls int
		want      map[string]stats.Day
	}{
		{
			name:      "nothing heard, nothing written",
			heard:     nil,
			wantCalls: 0,
			want:      map[string]stats.Day{},
		},
		{
			name: "one upsert per tenant and day",
			heard: map[string][]message.Message{
				"acme": {msg("grp_1", day1), msg("p2p_1_2", day1), msg("grp_1", day1), msg("grp_7", day2)},
				"beta": {msg("p2p_3_4", day1.In(time.FixedZone("CET", 3600)))}, // 00:59 on the 2nd in CET, the 1st in UTC
			},
			wantCalls: 3,
			want: map[string]stats.Day{
				"acme 2030-03-01": {Day: stats.DayOf(day1), Messages: 3, GroupMessages: 2, P2PMessages: 1},
				"acme 2030-03-02": {Day: day2, Messages: 1, GroupMessages: 1},
				"beta 2030-03-01": {Day: stats.DayOf(day1), Messages: 1, P2PMessages: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := newRows()
			c := dailystats.New(store, slog.New(slog.DiscardHandler))
			for tenant, ms := range tt.heard {
				for _, m := range ms {
					c.Committed(ctx, tenant, m)
				}
			}
			if err := c.Flush(ctx); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			if err := c.Flush(ctx); err != nil { // nothing new: no second upsert
				t.Fatalf("second Flush: %v", err)
			}
			calls, got := store.snapshot()
			if calls != tt.wantCalls || len(got) != len(tt.want) {
				t.Fatalf("%d upserts %+v, want %d: %+v", calls, got, tt.wantCalls, tt.want)
			}
			for k, w := range tt.want {
				if g := got[k]; !g.Day.Equal(w.Day) || g.Messages != w.Messages || g.GroupMessages != w.GroupMessages || g.P2PMessages != w.P2PMessages {
					t.Errorf("%s = %+v, want %+v", k, g, w)
				}
			}
		})
	}
}

func TestFailedFlushKeepsTheSums(t *testing.T) {
	ctx := context.Background()
	store := newRows()
	c := dailystats.New(store, slog.New(slog.DiscardHandler))
	c.Committed(ctx, "acme", msg("grp_1", day1))
	store.fail = true
	if err := c.Flush(ctx); err == nil {
		t.Fatal("Flush with the store down succeeded")
	}
	store.fail = false
	c.Committed(ctx, "acme", msg("p2p_1_2", day1))
	if err := c.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	_, got := store.snapshot()
	if d := got["acme 2030-03-01"]; d.Messages != 2 || d.GroupMessages != 1 || d.P2PMessages != 1 {
		t.Fatalf("after a failed and a good flush: %+v, want both messages", d)
	}
}

func TestRunFlushesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	store := newRows()
	c := dailystats.New(store, slog.New(slog.DiscardHandler))
	c.Committed(ctx, "acme", msg("grp_1", day1))
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, time.Millisecond)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, got := store.snapshot(); got["acme 2030-03-01"].Messages == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run never flushed")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
