package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/ports"
)

// BenchmarkSendPathRedis measures the Redis server's CPU per message of each scripted step of
// a send and its delivery (issue 30 part 2), in the shapes of the bench's t1 (groups of 10) and
// w1 (P2P pairs): a round of 40 messages, one per sender, is allocated and settled
// concurrently (as the send path's batches form), followed up concurrently (route, hot entry,
// job, acked mark, settle), taken from the queue and acked, and applied to the recipients'
// lists in one pass. Per step and message it reports the server's CPU (INFO cpu:
// <step>-µs), the time INFO commandstats gives the scripts less the commands they ran
// (<step>-lua-µs: the interpreter's and the redis.call bridge's own share), the commands
// (<step>-cmds: those the scripts ran, and the step's own), and a fixed script's CPU (calib),
// to compare runs by. Run it against a Redis no one else uses: the server's counters are
// global.
func BenchmarkSendPathRedis(b *testing.B) {
	for _, shape := range []string{"t1", "w1"} {
		b.Run(shape, func(b *testing.B) { benchSendPath(b, shape) })
	}
}

// sendPathMsg is one message of a round: its topic, sender, conversation and recipients.
type sendPathMsg struct {
	topic string
	from  int64
	conv  int64
	to    []int64
}

func sendPathRound(shape string, round int) []sendPathMsg {
	const n = 40
	out := make([]sendPathMsg, n)
	for i := range out {
		if shape == "t1" { // 20 groups of 10, two senders of each per round
			g := int64(i % 20)
			members := make([]int64, 10)
			for j := range members {
				members[j] = 1000 + 10*g + int64(j)
			}
			out[i] = sendPathMsg{topic: fmt.Sprintf("grp_%d", g+1), from: members[(round*2+i/20)%10], conv: g + 1, to: members}
			continue
		}
		p := int64((round*n + i) % 500) // 500 pairs, 40 of them per round
		a := 20_000 + 2*p
		out[i] = sendPathMsg{topic: fmt.Sprintf("p2p_%d_%d", a, a+1), from: a + int64(round%2), conv: 100_000 + p, to: []int64{a, a + 1}}
	}
	return out
}

func benchSendPath(b *testing.B, shape string) {
	c := testClient(b)
	tenant := testTenant(b, c)
	ctx := context.Background()
	seqs := allocatorThisMonth(b, c, tenant)
	queue, err := NewDeliverQueue(c).WithPartitions(8)
	if err != nil {
		b.Fatal(err)
	}
	hot := NewHotCache(c, HotCacheOptions{Window: time.Hour, MaxPerTopic: 200})
	follow, lists, routes := NewCommitFollowUp(queue, hot), NewDialogStore(c), NewRouteCache(c)
	steps := []string{"alloc", "followup", "take", "lists", "calib"}
	var total [5]stepCost
	idle := stepCost{}
	msgs := 0
	seeded := map[string]bool{}
	for round := 0; b.Loop(); round++ {
		ms := sendPathRound(shape, round)
		for _, m := range ms {
			if !seeded[m.topic] {
				if err := seqs.Reseed(ctx, tenant, m.topic, 0); err != nil {
					b.Fatal(err)
				}
			}
		}
		allocs := make([]seq.Allocation, len(ms))
		attempts := make([]string, len(ms))
		// each step runs between two snapshots; an empty step's cost is taken off
		step := func(i int, run func()) {
			s0 := readStepCost(b, c)
			run()
			total[i] = total[i].plus(readStepCost(b, c).minus(s0))
		}
		s0 := readStepCost(b, c)
		idle = idle.plus(readStepCost(b, c).minus(s0))
		concurrently := func(f func(i int, m sendPathMsg) error) {
			var wg sync.WaitGroup
			for i, m := range ms {
				wg.Go(func() {
					if err := f(i, m); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
		}
		step(0, func() {
			concurrently(func(i int, m sendPathMsg) error {
				attempts[i] = fmt.Sprintf("a%d.%d", round, i)
				a, err := seqs.Allocate(ctx, tenant, seq.Request{Topic: m.topic, From: m.from,
					ClientMsgID: attempts[i], MsgID: int64(round*len(ms) + i + 1), Hash: "h",
					Attempt: attempts[i], PendingFor: 10 * time.Second})
				allocs[i] = a
				return err
			})
		})
		for i, m := range ms { // a topic someone reads has a route
			if !seeded[m.topic] {
				seeded[m.topic] = true
				if err := routes.Replace(ctx, tenant, m.topic, route.Route{{Month: allocs[i].Month, MinSeq: 1, MaxSeq: 1, Count: 1}}); err != nil {
					b.Fatal(err)
				}
			}
		}
		step(1, func() {
			concurrently(func(i int, m sendPathMsg) error {
				a := allocs[i]
				created := time.Now()
				msg := message.Message{Topic: m.topic, ConversationID: m.conv, Seq: a.Seq, MsgID: a.MsgID, From: m.from,
					ClientMsgID: attempts[i], Type: "text", Content: []byte(`{"text":"` + strings.Repeat("x", 100) + `"}`),
					CreatedAt: created, Month: a.Month}
				r := follow.Apply(ctx, tenant, ports.FollowUp{
					Route: &ports.RouteUpdate{Topic: m.topic, Segment: route.Segment{Month: a.Month, MinSeq: a.Seq, MaxSeq: a.Seq, Count: 1,
						MinCreatedAt: created, MaxCreatedAt: created}},
					Hot:    &msg,
					Job:    &delivery.Job{Kind: delivery.KindMessage, Topic: m.topic, MsgID: a.MsgID, ConversationID: m.conv, From: m.from, Message: &msg},
					Acked:  &ports.AckedMark{Topic: m.topic, From: m.from, ClientMsgID: attempts[i]},
					Settle: &ports.PendingSettle{Topic: m.topic, Attempt: attempts[i], Seqs: []int64{a.Seq}},
				})
				return errors.Join(r.Route, r.Hot, r.Job, r.Acked, r.Settle)
			})
		})
		step(2, func() {
			for p := range 8 {
				jobs, err := queue.TakeMore(ctx, tenant, p, 64)
				if err != nil {
					b.Fatal(err)
				}
				if err := queue.Ack(ctx, jobs...); err != nil {
					b.Fatal(err)
				}
			}
		})
		us := make([]dialog.Update, len(ms))
		for i, m := range ms {
			a := allocs[i]
			us[i] = dialog.Update{ConversationID: m.conv, Score: time.Now().UnixMilli(), Sender: m.from,
				Preview: dialog.Preview{Topic: m.topic, ConversationID: m.conv, MsgID: a.MsgID, Seq: a.Seq, Type: "text", Text: "hi"},
				Once:    strconv.FormatInt(a.MsgID, 10), OnceTTL: time.Minute, Batches: dialog.BatchesOf(m.to)}
		}
		step(3, func() {
			if _, err := lists.Apply(ctx, tenant, us...); err != nil {
				b.Fatal(err)
			}
		})
		step(4, func() {
			if err := c.Do(ctx, c.B().Eval().Script(calibrationScript).Numkeys(0).Build()).Error(); err != nil {
				b.Fatal(err)
			}
		})
		msgs += len(ms)
	}
	for i, name := range steps {
		t := total[i].minus(idle)
		b.ReportMetric(float64(t.cpu.Microseconds())/float64(msgs), name+"-µs/msg")
		b.ReportMetric(float64((t.script-t.inner).Microseconds())/float64(msgs), name+"-lua-µs/msg")
		b.ReportMetric(float64(t.calls)/float64(msgs), name+"-cmds/msg")
	}
}

// calibrationScript is the same work in every build: its µs per message (calib) moves only
// with the box's speed of the moment, so that the steps of runs taken under different load
// compare as their ratio to it.
const calibrationScript = `
local s = 0
for i = 1, 400 do
  if redis.call('SISMEMBER', 'calibration:none', tostring(i)) == 0 then s = s + 1 end
end
return s
`

// stepCost is the server's counters: its CPU, the time of its script calls, and of the
// commands they and the benchmark ran (INFO itself left out).
// calls counts those commands.
type stepCost struct {
	cpu, script, inner time.Duration
	calls              int64
}

func (s stepCost) plus(o stepCost) stepCost {
	return stepCost{s.cpu + o.cpu, s.script + o.script, s.inner + o.inner, s.calls + o.calls}
}

func (s stepCost) minus(o stepCost) stepCost {
	return stepCost{s.cpu - o.cpu, s.script - o.script, s.inner - o.inner, s.calls - o.calls}
}

func readStepCost(b *testing.B, c rueidis.Client) stepCost {
	info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	s := stepCost{cpu: redisCPU(b, c)}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, usec := statField(b, rest, "calls="), statField(b, rest, "usec=")
		switch d := time.Duration(usec) * time.Microsecond; name {
		case "cmdstat_evalsha", "cmdstat_eval":
			s.script += d
		case "cmdstat_info":
		default:
			s.inner += d
			s.calls += calls
		}
	}
	return s
}

// statField reads one number of a commandstats line ("calls=3,usec=10,…").
func statField(b *testing.B, line, name string) int64 {
	_, v, _ := strings.Cut(line, name)
	v, _, _ = strings.Cut(v, ",")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		b.Fatalf("commandstats %q: %s: %v", line, name, err)
	}
	return n
}
