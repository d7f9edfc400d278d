package redis

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestCommitFollowUpContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.CommitFollowUp(t, func(t *testing.T, partitions int) contract.FollowUpFixture {
			queue, err := NewDeliverQueue(c).WithPartitions(partitions)
			if err != nil {
				t.Fatal(err)
			}
			hot := NewHotCache(c, HotCacheOptions{Window: time.Hour, MaxPerTopic: 100})
			seqs := NewSeqAllocator(c, 0)
			return contract.FollowUpFixture{
				Tenant: testTenant(t, c), FollowUp: NewCommitFollowUp(queue, hot),
				Routes: NewRouteCache(c), Hot: hot, Queue: queue, Seq: seqs, Pending: seqs, Months: NewMonthState(c),
			}
		})
	})
}

// TestCommitFollowUpPartsFailApart: a part whose key Redis holds with another type fails in the
// script, and the others are still written; a failed job leaves the acked mark and the settle
// unattempted.
func TestCommitFollowUpPartsFailApart(t *testing.T) {
	const topic = "grp_1"
	cases := []struct {
		name    string
		spoiled func(k Keys) string
		want    func(r ports.FollowUpResult) bool
	}{
		{"route", func(k Keys) string { return k.Group(TopicGroup(topic)).RouteMeta(topic) }, func(r ports.FollowUpResult) bool {
			return r.Route != nil && r.Hot == nil && r.Job == nil && r.Acked == nil && r.Settle == nil
		}},
		{"hot", func(k Keys) string { return k.Group(TopicGroup(topic)).HotMessages(topic) }, func(r ports.FollowUpResult) bool {
			return r.Route == nil && r.Hot != nil && r.Job == nil && r.Acked == nil && r.Settle == nil
		}},
		{"acked", func(k Keys) string { return k.Group(TopicGroup(topic)).Idem(topic, 7, "c") }, func(r ports.FollowUpResult) bool {
			return r.Route == nil && r.Hot == nil && r.Job == nil && r.Acked != nil && r.Settle == nil
		}},
		{"settle", func(k Keys) string { return k.Group(TopicGroup(topic)).Pending(topic) }, func(r ports.FollowUpResult) bool {
			return r.Route == nil && r.Hot == nil && r.Job == nil && r.Acked == nil && r.Settle != nil
		}},
		{"job", func(k Keys) string { return k.DeliverQueue() }, func(r ports.FollowUpResult) bool {
			return r.Route == nil && r.Hot == nil && r.Job != nil &&
				errors.Is(r.Acked, ports.ErrNotAttempted) && errors.Is(r.Settle, ports.ErrNotAttempted)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t)
			tenant := testTenant(t, c)
			k, _ := KeysOf(tenant)
			ctx := t.Context()
			routes := NewRouteCache(c)
			jun := month.Month(203106)
			if err := routes.Replace(ctx, tenant, topic, route.Route{{Month: jun, MinSeq: 1, MaxSeq: 1, Count: 1}}); err != nil {
				t.Fatal(err)
			}
			// The allocation's record, then the spoiled key: a string where Redis wants a hash,
			// a list or a ZSET, so every command of that part fails with WRONGTYPE.
			if err := c.Do(ctx, c.B().Hset().Key(k.Group(TopicGroup(topic)).Idem(topic, 7, "c")).FieldValue().FieldValue("seq", "2").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if err := c.Do(ctx, c.B().Set().Key(tc.spoiled(k)).Value("x").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			m := message.Message{Topic: topic, Seq: 2, MsgID: 9, From: 7, ClientMsgID: "c", Month: jun, CreatedAt: time.Now().UTC()}
			f := ports.FollowUp{
				Route:  &ports.RouteUpdate{Topic: topic, Segment: route.Segment{Month: jun, MinSeq: 2, MaxSeq: 2, Count: 1}},
				Hot:    &m,
				Job:    &delivery.Job{Kind: delivery.KindMessage, MsgID: 9, Topic: topic, Message: &m},
				Acked:  &ports.AckedMark{Topic: topic, From: 7, ClientMsgID: "c"},
				Settle: &ports.PendingSettle{Topic: topic, Attempt: "a", Seqs: []int64{2}},
			}
			r := testFollowUp(c).Apply(ctx, tenant, f)
			if !tc.want(r) {
				t.Fatalf("with %s spoiled: %+v", tc.name, r)
			}
			if tc.name != "route" {
				if got, _, err := routes.Segments(ctx, tenant, topic); err != nil || len(got) != 1 || got[0].MaxSeq != 2 || got[0].Count != 2 {
					t.Fatalf("route after the follow-up: %+v, %v; want seq 2 merged in", got, err)
				}
			}
		})
	}
}

// TestConcurrentFollowUpsShareScriptCalls: the follow-ups of one slot group that come while a
// call of the group is in flight go together in the next call (issue 30 part 2), and each
// still gets its own parts' outcomes: a spoiled idempotency record fails that send's acked
// mark only. The topic's route ranges and hot entries of the batch leave what one follow-up
// after another would.
func TestConcurrentFollowUpsShareScriptCalls(t *testing.T) {
	const topic, sends, spoiled = "grp_1", 20, 7
	c := testClient(t)
	tenant := testTenant(t, c)
	k, _ := topicKeys(tenant, topic)
	ctx := t.Context()
	jun := month.Month(203106)
	// The route a follow-up merges into: Apply never creates one.
	if err := NewRouteCache(c).Replace(ctx, tenant, topic, route.Route{{Month: jun, MinSeq: 1, MaxSeq: 1, Count: 1}}); err != nil {
		t.Fatal(err)
	}
	for i := range sends {
		idem := k.Idem(topic, 7, fmt.Sprint("c", i))
		cmd := c.B().Hset().Key(idem).FieldValue().FieldValue("seq", strconv.Itoa(i+1)).Build()
		if i == spoiled {
			cmd = c.B().Set().Key(idem).Value("x").Build()
		}
		if err := c.Do(ctx, cmd).Error(); err != nil {
			t.Fatal(err)
		}
	}
	counter := &scriptCounter{Client: c}
	gated := &gatedScripts{Client: counter, open: make(chan struct{})}
	const kept = 5 // the hot cap: the batch's entries go in, then one trim keeps the newest
	f := NewCommitFollowUp(NewDeliverQueue(gated), NewHotCache(gated, HotCacheOptions{Window: time.Hour, MaxPerTopic: kept}))
	apply := func(i int) ports.FollowUpResult {
		m := message.Message{Topic: topic, Seq: int64(i + 1), MsgID: int64(i + 1), From: 7, ClientMsgID: fmt.Sprint("c", i), Month: jun, CreatedAt: time.Now().UTC()}
		return f.Apply(ctx, tenant, ports.FollowUp{
			Route: &ports.RouteUpdate{Topic: topic, Segment: route.Segment{Month: jun, MinSeq: m.Seq, MaxSeq: m.Seq, Count: 1}},
			Hot:   &m,
			Acked: &ports.AckedMark{Topic: topic, From: 7, ClientMsgID: m.ClientMsgID},
		})
	}
	results := make([]ports.FollowUpResult, sends)
	var wg sync.WaitGroup
	wg.Go(func() { results[0] = apply(0) })
	queued := func() int {
		f.batches.mu.Lock()
		defer f.batches.mu.Unlock()
		if q := f.batches.groups[f.slot(tenant, k.Route(topic))]; q != nil {
			return len(q.waiting)
		}
		return -1
	}
	for queued() < 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < sends; i++ {
		wg.Go(func() { results[i] = apply(i) })
	}
	for queued() < sends-1 {
		time.Sleep(time.Millisecond)
	}
	close(gated.open)
	wg.Wait()
	for i, r := range results {
		if r.Route != nil || r.Hot != nil || (r.Acked != nil) != (i == spoiled) {
			t.Errorf("send %d: %+v; want only send %d's acked mark failed", i, r, spoiled)
		}
	}
	if got := counter.scripts.Load(); got != 2 {
		t.Errorf("%d follow-ups took %d script calls; want 2 (the first alone, then the rest)", sends, got)
	}
	routes, _, err := NewRouteCache(c).Segments(ctx, tenant, topic)
	if err != nil || len(routes) != 1 || routes[0].MinSeq != 1 || routes[0].MaxSeq != sends || routes[0].Count != sends+1 {
		t.Fatalf("route after the follow-ups: %+v, %v; want seqs 1..%d merged", routes, err, sends)
	}
	hot, err := f.hot.After(ctx, tenant, topic, 0, 100)
	if err != nil || len(hot) != kept || hot[0].Seq != sends-kept+1 {
		t.Fatalf("hot cache after the follow-ups: %d messages, %v; want seqs %d..%d", len(hot), err, sends-kept+1, sends)
	}
}

// TestFollowUpCallsPerNode: a follow-up whose job and topic lie in two slot groups is two
// script calls on a cluster, the job's first, and one on one node, where any keys may share a
// call (issue 30 part 2); its parts are all written either way.
func TestFollowUpCallsPerNode(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		const topic = "grp_1"
		tenant := testTenant(t, c)
		counter := &scriptCounter{Client: c}
		queue := NewDeliverQueue(counter)
		f := NewCommitFollowUp(queue, NewHotCache(counter, HotCacheOptions{Window: time.Hour, MaxPerTopic: 10}))
		m := message.Message{Topic: topic, Seq: 1, MsgID: 9, From: 7, ClientMsgID: "c", Month: 203106, CreatedAt: time.Now().UTC()}
		r := f.Apply(t.Context(), tenant, ports.FollowUp{
			Hot: &m, Job: &delivery.Job{Kind: delivery.KindMessage, MsgID: 9, Topic: topic, Message: &m},
			Settle: &ports.PendingSettle{Topic: topic, Attempt: "a", Seqs: []int64{1}},
		})
		if r != (ports.FollowUpResult{}) {
			t.Fatalf("follow-up: %+v; want every part written", r)
		}
		want := int64(2)
		if c.Mode() != rueidis.ClientModeCluster {
			want = 1
		}
		if got := counter.scripts.Load(); got != want {
			t.Errorf("%d script calls; want %d", got, want)
		}
		k, _ := KeysOf(tenant)
		if n, err := c.Do(t.Context(), c.B().Llen().Key(k.DeliverQueue()).Build()).AsInt64(); err != nil || n != 1 {
			t.Errorf("queued jobs: %d, %v; want 1", n, err)
		}
	})
}

// TestAckedMarkOnlyFlagsARecord: the acked mark flags the record the allocation wrote, keeping
// its fields and expiry, and leaves nothing where no record is (expired, or lost with Redis).
func TestAckedMarkOnlyFlagsARecord(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		tenant := testTenant(t, c)
		ctx := t.Context()
		f := NewCommitFollowUp(NewDeliverQueue(c), NewHotCache(c, HotCacheOptions{Window: time.Hour, MaxPerTopic: 10}))
		for _, tc := range []struct {
			name   string
			record bool
		}{{"a record", true}, {"none", false}} {
			t.Run(tc.name, func(t *testing.T) {
				topic := "grp_" + strconv.Itoa(len(tc.name))
				k, err := topicKeys(tenant, topic)
				if err != nil {
					t.Fatal(err)
				}
				key := k.Idem(topic, 7, "c1")
				if tc.record {
					if err := c.Do(ctx, c.B().Hset().Key(key).FieldValue().FieldValue("seq", "5").FieldValue("month", "203106").
						FieldValue("msg_id", "9").FieldValue("hash", "h").FieldValue("state", "allocated").Build()).Error(); err != nil {
						t.Fatal(err)
					}
					if err := c.Do(ctx, c.B().Pexpire().Key(key).Milliseconds(time.Hour.Milliseconds()).Build()).Error(); err != nil {
						t.Fatal(err)
					}
				}
				r := f.Apply(ctx, tenant, ports.FollowUp{Acked: &ports.AckedMark{Topic: topic, From: 7, ClientMsgID: "c1"}})
				if r.Acked != nil {
					t.Fatalf("acked mark: %v", r.Acked)
				}
				got, err := c.Do(ctx, c.B().Hgetall().Key(key).Build()).AsStrMap()
				if err != nil {
					t.Fatal(err)
				}
				ttl, err := c.Do(ctx, c.B().Pttl().Key(key).Build()).AsInt64()
				if err != nil {
					t.Fatal(err)
				}
				if !tc.record {
					if len(got) != 0 || ttl != -2 {
						t.Errorf("record %v (ttl %d); want none", got, ttl)
					}
					return
				}
				if got["state"] != "acked" || got["seq"] != "5" || got["msg_id"] != "9" || ttl <= 0 {
					t.Errorf("record %v (ttl %d ms); want it acked with its fields and expiry", got, ttl)
				}
			})
		}
	})
}
