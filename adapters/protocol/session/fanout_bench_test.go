package session

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"github.com/redis/rueidis"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	redisadapter "github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/loop/deliver"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/ports"
)

// discardConn is a link that writes at once and whose client acknowledges every MESSAGE
// right away: the benchmark measures the server side only.
type discardConn struct {
	owner *Conn
}

func (d *discardConn) Loop() Loop { return nil }

func (d *discardConn) Write(bs [][]byte, done func(int, error)) error {
	done(0, nil)
	d.owner.Ack(binary.BigEndian.Uint32(bs[0][seqOffset:]))
	return nil
}

func (d *discardConn) Wake(done func()) error { done(); return nil }

func (d *discardConn) Close() error { return nil }

type noMetrics struct{}

func (noMetrics) Inc(string, ...string)              {}
func (noMetrics) Add(string, float64, ...string)     {}
func (noMetrics) Observe(string, float64, ...string) {}
func (noMetrics) Set(string, float64, ...string)     {}

// countingPusher counts the fan-outs and frames of the benchmark.
type countingPusher struct {
	*Registry
	want   int64
	jobs   atomic.Int64
	frames atomic.Int64
	done   chan struct{}
}

func (p *countingPusher) PushReach(ctx context.Context, tenant string, pushes ...delivery.Addressed) []delivery.Outcome {
	out := p.Registry.PushReach(ctx, tenant, pushes...)
	for _, o := range out {
		p.frames.Add(int64(o.Delivered))
	}
	// Pushes come in batches: close done on the batch that reaches want.
	n := int64(len(pushes))
	if total := p.jobs.Add(n); total >= p.want && total-n < p.want {
		close(p.done)
	}
	return out
}

// BenchmarkFanOut measures delivered MESSAGE frames per second for a group of 1,000 and of
// 10,000 members with every member online: the deliver workers update every member's
// conversation list (in Redis when IMD_TEST_REDIS_ADDR is set, else in memory) and push through
// the session registry to connections that write and acknowledge at once. One op is one message.
func BenchmarkFanOut(b *testing.B) {
	for _, members := range []int{1000, 10_000} {
		b.Run(fmt.Sprintf("members=%d/lists=memory", members), func(b *testing.B) {
			benchFanOut(b, members, memory.NewDialogStore(time.Now), "bench")
		})
		addr := os.Getenv("IMD_TEST_REDIS_ADDR")
		if addr == "" {
			continue
		}
		b.Run(fmt.Sprintf("members=%d/lists=redis", members), func(b *testing.B) {
			c, err := redisadapter.Open(context.Background(), addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			tenant := fmt.Sprintf("bench%d", time.Now().UnixNano())
			defer dropTenantKeys(c, tenant)
			benchFanOut(b, members, redisadapter.NewDialogStore(c), tenant)
		})
	}
}

// dropTenantKeys deletes the benchmark tenant's Redis keys.
func dropTenantKeys(c rueidis.Client, tenant string) {
	ctx := context.Background()
	var cursor uint64
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match("im:{"+tenant+"}:*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return
		}
		if len(e.Elements) > 0 {
			c.Do(ctx, c.B().Del().Key(e.Elements...).Build())
		}
		if cursor = e.Cursor; cursor == 0 {
			return
		}
	}
}

func benchFanOut(b *testing.B, members int, dialogs ports.DialogStore, tenant string) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := memory.NewDirectory()
	users := make([]int64, members)
	for i := range users {
		users[i] = int64(i + 1)
		if err := dir.CreateUser(ctx, tenant, social.User{ID: users[i]}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 1, Owner: 1}, 100, users[1:], 0); err != nil {
		b.Fatal(err)
	}
	reg := NewRegistry(Options{CompressMin: 512, AckTimeout: time.Minute, AckWindow: 1024}, noMetrics{}, log)
	for i, u := range users {
		d := &discardConn{}
		c := NewConn(uint64(i+1), d, Limits{Bytes: 4 << 20, Frames: 1024}, noMetrics{})
		d.owner = c
		reg.Bind(c, Identity{Tenant: tenant, User: u, Device: 1})
	}
	clock := memory.NewClock(time.Now())
	queue := memory.NewDeliverQueue(clock.Now)
	pusher := &countingPusher{Registry: reg, want: int64(b.N), done: make(chan struct{})}
	workers := deliver.New(deliver.Config{TakeTimeout: 100 * time.Millisecond, DoneTTL: time.Minute, MaxAttempts: 3}, deliver.Deps{
		Queue: queue, Pusher: pusher, Dialogs: dialogs, Notifier: noNotifier{},
		Mailer:  inbox.NewMailer(inbox.MailerDeps{Mailbox: memory.NewMailbox(), Pusher: pusher, IDs: memory.NewIDs(clock), Clock: clock, Log: log}),
		Members: membership.New(dir, clock, time.Hour), Metrics: noMetrics{}, Clock: clock, Log: log,
	})
	for i := range b.N {
		m := message.Message{
			Topic: "grp_1", GroupID: 1, ConversationID: 100, Seq: int64(i + 1), MsgID: int64(1_000_000 + i), From: 1,
			ClientMsgID: fmt.Sprint("c", i), Type: "text", Content: json.RawMessage(`{"text":"hello, a thousand people"}`),
			Status: message.StatusNormal, Version: 1, CreatedAt: clock.Now(),
		}
		err := queue.Push(ctx, delivery.Job{
			Tenant: tenant, Kind: delivery.KindMessage, MsgID: m.MsgID, Topic: m.Topic, ConversationID: 100, From: 1, ExcludeDevice: 1, Message: &m,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	if err := workers.Start(ctx, []string{tenant}); err != nil {
		b.Fatal(err)
	}
	<-pusher.done
	elapsed := time.Since(start)
	b.StopTimer()
	if err := workers.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	if want := int64(b.N) * int64(members-1); pusher.frames.Load() != want {
		b.Fatalf("delivered %d frames, want %d", pusher.frames.Load(), want)
	}
	b.ReportMetric(float64(pusher.frames.Load())/elapsed.Seconds(), "frames/s")
}

type noNotifier struct{}

func (noNotifier) Notify(context.Context, string, delivery.Notification) error { return nil }
