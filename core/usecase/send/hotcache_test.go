package send_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/send"
)

// brokenHotCache fails every write, like Redis refusing the hot-cache script.
type brokenHotCache struct{ *memory.HotCache }

func (brokenHotCache) Put(context.Context, string, message.Message) error {
	return errors.New("redis down")
}

// TestSendWritesTheHotCacheAfterCommit: a stored message lands in the hot cache, and a cache
// that fails costs a metric, never the send (seed 000 §6.1).
func TestSendWritesTheHotCacheAfterCommit(t *testing.T) {
	cases := []struct {
		name       string
		broken     bool
		wantCached int
		wantFailed float64
	}{
		{"cache takes the message", false, 1, 0},
		{"cache fails, send succeeds", true, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			hot := memory.NewHotCache(f.clock.Now, 24*time.Hour, 100)
			ids := memory.NewIDs(f.clock)
			var cache memory.HotWriter = hot
			if tc.broken {
				cache = brokenHotCache{hot}
			}
			f.svc = send.New(send.Config{MsgIDWindow: 5 * time.Minute}, send.Deps{
				Seq: f.seqs, Store: f.store, FollowUp: f.followUp(memory.NewRouteCache(), cache), IDs: ids, Clock: f.clock,
				Metrics: f.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Resolver: conversation.NewResolver(f.dir, ids, membership.New(f.dir, f.clock, time.Second)),
				Months:   f.manager,
			})
			res, err := f.send(1, conversation.Address{Topic: f.group}, "c1", "hi")
			if err != nil {
				t.Fatalf("send: %v", err)
			}
			cached, err := hot.After(context.Background(), tenant, f.group, 0, 10)
			if err != nil || len(cached) != tc.wantCached {
				t.Fatalf("cached %d messages (%v), want %d", len(cached), err, tc.wantCached)
			}
			if tc.wantCached > 0 && (cached[0].MsgID != res.Message.MsgID || cached[0].Seq != res.Message.Seq) {
				t.Fatalf("cached %+v, sent %+v", cached[0], res.Message)
			}
			if n := f.metrics.Count("group_message_hot_cache_write_failed_total"); n != tc.wantFailed {
				t.Fatalf("%v failed writes counted, want %v", n, tc.wantFailed)
			}
		})
	}
}
